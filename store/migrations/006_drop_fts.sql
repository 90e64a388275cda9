-- Search runs on an index the daemon holds in memory, loaded from the
-- chunks table and kept current by the store's commit notifications; the
-- FTS5 copy of every chunk is no longer read.
DROP TABLE IF EXISTS chunks_vocab_col;
DROP TABLE IF EXISTS chunks_vocab;
DROP TABLE IF EXISTS chunks_fts;
DELETE FROM meta WHERE key = 'analyzer_version';

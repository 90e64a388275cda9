-- The full-text index gains an "exact" column: the unstemmed surface forms
-- of a document's known terms (title, categories, tags), so that an exact
-- match on a known term outranks a stem conflation. '.' becomes a token
-- character for numbers and versions ("3.14", "v1.2"), and combining marks
-- stay inside words. The table is recreated empty: EnsureIndex refills it
-- from the chunks table, which holds everything needed.
DROP TABLE chunks_fts;
CREATE VIRTUAL TABLE chunks_fts USING fts5(
	title, keywords, body, exact,
	content = '',
	contentless_delete = 1,
	tokenize = "unicode61 remove_diacritics 0 tokenchars '_.' categories 'L* N* Co M*'"
);

-- One row per distinct term with the number of chunks holding it: the
-- vocabulary for typo tolerance and the document frequencies for scoring.
CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab(chunks_fts, 'row');
-- Per column: term counts give each column's average length for BM25F.
CREATE VIRTUAL TABLE chunks_vocab_col USING fts5vocab(chunks_fts, 'col');

DELETE FROM meta WHERE key = 'analyzer_version';

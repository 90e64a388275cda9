-- The crawl frontier of a pass lives in urls, so a pass killed midway
-- resumes where it stopped: queued = 1 rows of run_id are still to fetch,
-- in priority order (URL-first sources before post IDs, then links).
ALTER TABLE urls ADD COLUMN run_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE urls ADD COLUMN queued INTEGER NOT NULL DEFAULT 0;
ALTER TABLE urls ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE urls ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
ALTER TABLE urls ADD COLUMN done_run INTEGER NOT NULL DEFAULT 0;
CREATE INDEX urls_frontier ON urls(run_id, priority) WHERE queued = 1;
CREATE INDEX urls_post_id ON urls(post_id) WHERE post_id > 0;

-- How a pass was asked for, so a resumed pass keeps its options.
ALTER TABLE crawl_runs ADD COLUMN opt_full INTEGER NOT NULL DEFAULT 0;
ALTER TABLE crawl_runs ADD COLUMN opt_incremental INTEGER NOT NULL DEFAULT 0;
ALTER TABLE crawl_runs ADD COLUMN discovery_ok INTEGER NOT NULL DEFAULT 0;
ALTER TABLE crawl_runs ADD COLUMN resumed INTEGER NOT NULL DEFAULT 0;

-- Webhook events keep the fields workers act on in columns; the rest of
-- the sender's JSON stays in payload.
ALTER TABLE events ADD COLUMN post_type TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN status TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN post_ids TEXT NOT NULL DEFAULT '[]';
ALTER TABLE events ADD COLUMN sent_at TEXT NOT NULL DEFAULT '';
CREATE INDEX events_post ON events(post_id) WHERE applied_at = '';

-- Deduplication by content hash looks pages up by their hash.
CREATE INDEX documents_content_hash ON documents(content_hash);

-- Documents are the public pages of the site, one row per canonical URL.
-- body is the Markdown main content: chunk offsets (in Unicode code points)
-- index into it, so a quote is always body[start:end].
CREATE TABLE documents (
	id           INTEGER PRIMARY KEY,
	url          TEXT NOT NULL UNIQUE,
	post_id      INTEGER NOT NULL DEFAULT 0,
	post_type    TEXT NOT NULL DEFAULT '',
	title        TEXT NOT NULL DEFAULT '',
	lang         TEXT NOT NULL DEFAULT '',
	published    TEXT NOT NULL DEFAULT '',
	modified     TEXT NOT NULL DEFAULT '',
	description  TEXT NOT NULL DEFAULT '',
	author       TEXT NOT NULL DEFAULT '',
	categories   TEXT NOT NULL DEFAULT '[]',
	tags         TEXT NOT NULL DEFAULT '[]',
	body         TEXT NOT NULL DEFAULT '',
	text         TEXT NOT NULL DEFAULT '',
	thin         INTEGER NOT NULL DEFAULT 0,
	thin_reason  TEXT NOT NULL DEFAULT '',
	source       TEXT NOT NULL DEFAULT '',
	word_count   INTEGER NOT NULL DEFAULT 0,
	content_hash TEXT NOT NULL DEFAULT '',
	fetched_at   TEXT NOT NULL DEFAULT '',
	indexed_at   TEXT NOT NULL DEFAULT '',
	sources      TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX documents_post_id ON documents(post_id) WHERE post_id > 0;
CREATE INDEX documents_published ON documents(published);
CREATE INDEX documents_type_published ON documents(post_type, published);

CREATE TABLE chunks (
	id           INTEGER PRIMARY KEY,
	doc_id       INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
	ord          INTEGER NOT NULL,
	start        INTEGER NOT NULL,
	end          INTEGER NOT NULL,
	text         TEXT NOT NULL,
	heading_path TEXT NOT NULL DEFAULT '[]',
	type         TEXT NOT NULL DEFAULT 'prose',
	code_lang    TEXT NOT NULL DEFAULT '',
	content_hash TEXT NOT NULL DEFAULT '',
	tokens       INTEGER NOT NULL DEFAULT 0,
	UNIQUE (doc_id, ord)
);
CREATE INDEX chunks_type ON chunks(type, code_lang);

-- The full-text index holds analyzed terms (folded, stemmed, produced in Go)
-- rather than raw text, because modernc.org/sqlite has no hook for custom
-- FTS5 tokenizers. rowid = chunks.id. Contentless, so the raw text is stored
-- once, in chunks.
CREATE VIRTUAL TABLE chunks_fts USING fts5(
	title, keywords, body,
	content = '',
	contentless_delete = 1,
	tokenize = "unicode61 remove_diacritics 0 tokenchars '_'"
);

-- The crawl frontier: every URL discovery found, with where it came from and
-- how fetching it went. Kept as data so a restart resumes and failures can be
-- shown on the status page.
CREATE TABLE urls (
	url           TEXT PRIMARY KEY,
	sources       TEXT NOT NULL DEFAULT '[]',
	post_id       INTEGER NOT NULL DEFAULT 0,
	lastmod       TEXT NOT NULL DEFAULT '',
	etag          TEXT NOT NULL DEFAULT '',
	last_modified TEXT NOT NULL DEFAULT '',
	status        TEXT NOT NULL DEFAULT 'pending',
	http_status   INTEGER NOT NULL DEFAULT 0,
	error         TEXT NOT NULL DEFAULT '',
	error_class   TEXT NOT NULL DEFAULT '',
	attempts      INTEGER NOT NULL DEFAULT 0,
	next_try      TEXT NOT NULL DEFAULT '',
	fetched_at    TEXT NOT NULL DEFAULT '',
	discovered_at TEXT NOT NULL DEFAULT '',
	seen_run      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX urls_status ON urls(status, next_try);

CREATE TABLE crawl_runs (
	id          INTEGER PRIMARY KEY,
	kind        TEXT NOT NULL,
	started_at  TEXT NOT NULL,
	finished_at TEXT NOT NULL DEFAULT '',
	discovered  INTEGER NOT NULL DEFAULT 0,
	fetched     INTEGER NOT NULL DEFAULT 0,
	indexed     INTEGER NOT NULL DEFAULT 0,
	unchanged   INTEGER NOT NULL DEFAULT 0,
	removed     INTEGER NOT NULL DEFAULT 0,
	errors      INTEGER NOT NULL DEFAULT 0,
	error       TEXT NOT NULL DEFAULT ''
);

-- Webhook events are written here before the 202 goes out, so an accepted
-- event survives a crash. event_id is the sender's id, used to refuse replays.
CREATE TABLE events (
	id          INTEGER PRIMARY KEY,
	event_id    TEXT NOT NULL UNIQUE,
	type        TEXT NOT NULL,
	post_id     INTEGER NOT NULL DEFAULT 0,
	url         TEXT NOT NULL DEFAULT '',
	payload     TEXT NOT NULL DEFAULT '{}',
	received_at TEXT NOT NULL,
	applied_at  TEXT NOT NULL DEFAULT '',
	attempts    INTEGER NOT NULL DEFAULT 0,
	error       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX events_pending ON events(applied_at) WHERE applied_at = '';

-- Small facts about the site and the daemon (site name, tagline, last crawl).
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);

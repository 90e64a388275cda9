-- The question log behind the insights report: one row per visitor-facing
-- search_site call or chat turn. It holds no IP, user id or cookie; the
-- question is redacted (emails, phone numbers, long digit runs) before it
-- is written. Rows older than the retention are purged on the schedule.
CREATE TABLE questions (
	id         INTEGER PRIMARY KEY,
	at         TEXT NOT NULL,              -- RFC 3339 UTC
	site       TEXT NOT NULL DEFAULT '',   -- the site's home URL, or a blog id
	kind       TEXT NOT NULL,              -- search | chat
	turn_id    TEXT NOT NULL DEFAULT '',   -- a chat turn's id, '' for a search
	question   TEXT NOT NULL,
	-- The words the search corrected, as the JSON {"typo": "term"}, so the
	-- report groups a misspelt question with the right one.
	corrections TEXT NOT NULL DEFAULT '{}',
	action     TEXT NOT NULL DEFAULT '',   -- answer | clarify | ambiguous | no_match
	evidence   TEXT NOT NULL DEFAULT '',   -- grounded | thin | none
	top_urls   TEXT NOT NULL DEFAULT '[]', -- JSON list, best first
	expanded   INTEGER NOT NULL DEFAULT 0, -- selective expansion fetched pages
	live_fetch INTEGER NOT NULL DEFAULT 0, -- a page was fetched live
	outcome    TEXT NOT NULL DEFAULT '',   -- chat: sourced | unsourced | refused | provider_error
	vote       INTEGER NOT NULL DEFAULT 0, -- 1 up, -1 down, 0 none
	comment    TEXT NOT NULL DEFAULT ''
);
CREATE INDEX questions_at ON questions(at);
CREATE UNIQUE INDEX questions_turn ON questions(turn_id) WHERE turn_id != '';

-- Outgoing links of each stored page, as the extractor saw them (anchor
-- text included). Selective expansion scores the links of the best
-- documents that lead to pages not indexed yet. Links go with their page.
CREATE TABLE links (
	doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
	url    TEXT NOT NULL,
	text   TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (doc_id, url)
);
CREATE INDEX links_url ON links(url);

-- Samples of the index's size and freshness over time, for the status
-- page's charts. One row per sample; old rows are pruned.
CREATE TABLE stats_samples (
	at          TEXT PRIMARY KEY,
	documents   INTEGER NOT NULL,
	chunks      INTEGER NOT NULL,
	thin        INTEGER NOT NULL,
	lag_seconds INTEGER NOT NULL
);

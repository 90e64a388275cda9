-- /v1/status and /metrics count documents by fetch age, and take the oldest
-- fetch, the newest index time and the thin pages. fetched_at, indexed_at
-- and thin come after body and text in a row, so without an index each
-- count read every page's text, overflow pages and all: the status view's
-- five counts took 100 ms of CPU for 5,190 pages, and during a crawl that
-- changes pages the view is read again after every commit.
CREATE INDEX documents_fetched ON documents(fetched_at, indexed_at, thin);

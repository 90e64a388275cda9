-- A pass re-reads every page, and most come back byte for byte as they
-- were: body_hash is the hash of the body last indexed at the URL, with
-- the build that extracted it, so such a page is marked unchanged without
-- being extracted and stored again (two thirds of a re-crawl's CPU).
ALTER TABLE urls ADD COLUMN body_hash TEXT NOT NULL DEFAULT '';

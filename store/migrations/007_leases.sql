-- A lease is a named right to run one thing at a time across processes:
-- "crawl" is held by the process running an index pass. Its holder renews
-- it well before expires_at; a holder that is killed stops renewing, so
-- the lease lapses and the next pass takes it. pid, host and what name the
-- holder in the message a refused pass prints.
CREATE TABLE leases (
	name        TEXT PRIMARY KEY,
	holder      TEXT NOT NULL,
	pid         INTEGER NOT NULL,
	host        TEXT NOT NULL,
	what        TEXT NOT NULL DEFAULT '',
	acquired_at TEXT NOT NULL,
	expires_at  TEXT NOT NULL
);

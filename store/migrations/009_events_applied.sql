-- /v1/status asks for the last event applied at every request: without an
-- index that was a scan and a sort of the day's events, which a site's bulk
-- edits make tens of thousands (4 ms for 20,000 in the sqlite3 shell).
CREATE INDEX events_applied ON events(applied_at) WHERE applied_at != '';

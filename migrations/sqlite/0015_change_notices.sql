-- PostgreSQL's migration 0015 adds triggers that NOTIFY open desk pages of changes. SQLite
-- has no channel between processes: the desk compares a fingerprint of the same things
-- instead (server/src/workers/changes.rs). Kept so both schemas share their version.
SELECT 1;

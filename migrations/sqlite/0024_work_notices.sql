-- PostgreSQL's migration 0024 adds triggers that NOTIFY what waits for work. SQLite has no
-- channel between processes: a server wakes its own waiters after its own writes. Kept so
-- both schemas share their version.
SELECT 1;

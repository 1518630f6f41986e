-- Rate limits shared by every desk server on one database (PostgreSQL; the embedded SQLite
-- desk keeps its buckets in memory and this table stays empty). A token bucket per limit and
-- client, keyed by a hash of the client's key (no address or email is stored), updated by
-- compare-and-swap.
CREATE TABLE rate_buckets (
    key TEXT PRIMARY KEY,
    tokens REAL NOT NULL,
    updated_ms BIGINT NOT NULL
);
CREATE INDEX rate_buckets_by_time ON rate_buckets (updated_ms);

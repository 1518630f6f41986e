-- The spend guard's book: every model call reserves its worst case before it starts; when it
-- ends it is settled at its reported cost (never above the reservation), or at the worst
-- case when it timed out or lost its connection. Open reservations count at worst case.
CREATE TABLE model_calls (
    id TEXT PRIMARY KEY,
    client TEXT NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    reserved_micros BIGINT NOT NULL,
    settled_micros BIGINT,
    outcome TEXT,
    created_at BIGINT NOT NULL,
    settled_at BIGINT
);
CREATE INDEX model_calls_by_time ON model_calls (created_at);

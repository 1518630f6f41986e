-- The ledger: one row per bug (compare-and-swap on version), its hash-chained audit events,
-- and the transactional outbox.
CREATE TABLE bugs (
    id          TEXT PRIMARY KEY,
    component   TEXT NOT NULL,
    state       TEXT NOT NULL,
    version     BIGINT NOT NULL,
    document    TEXT NOT NULL,
    event_count BIGINT NOT NULL,
    head_hash   TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL
);
CREATE INDEX bugs_by_state ON bugs (state);

CREATE TABLE audit_events (
    bug_id     TEXT NOT NULL REFERENCES bugs (id),
    seq        BIGINT NOT NULL,
    kind       TEXT NOT NULL,
    actor_kind TEXT NOT NULL,
    actor_id   TEXT NOT NULL,
    at         BIGINT NOT NULL,
    body       TEXT NOT NULL,
    prev_hash  TEXT NOT NULL,
    hash       TEXT NOT NULL,
    PRIMARY KEY (bug_id, seq)
);

-- Append-only: the application never edits or deletes an event. Someone with direct database
-- access can drop these triggers; the hash chain is what then shows the tampering.
CREATE FUNCTION r2r_audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit events are append-only';
END
$$;
CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION r2r_audit_events_append_only();

CREATE TABLE outbox_jobs (
    idempotency_key TEXT PRIMARY KEY,
    bug_id          TEXT,
    kind            TEXT NOT NULL,
    consumer        TEXT NOT NULL,
    payload         TEXT NOT NULL,
    available_at    BIGINT NOT NULL,
    attempts        BIGINT NOT NULL DEFAULT 0,
    last_error      TEXT,
    lease_id        TEXT,
    leased_until    BIGINT,
    done_at         BIGINT,
    created_at      BIGINT NOT NULL
);
CREATE INDEX outbox_ready ON outbox_jobs (consumer, done_at, available_at);

-- Sandbox runs as jobs on the database's queue, for desks whose measurements run on other
-- hosts (`R2R_SANDBOX_RUNNER=workers`): the desk writes a job (the command, its limits and the
-- snapshot as a tar archive), a `r2r sandbox worker` claims it under a lease it renews, runs it
-- in its own sandbox and reports the outcome; the desk reads the outcome and deletes the row.
-- An expired lease makes the job claimable again, a bounded number of times.
CREATE TABLE sandbox_jobs (
    id           TEXT PRIMARY KEY,
    purpose      TEXT NOT NULL,
    spec         TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    claims       BIGINT NOT NULL DEFAULT 0,
    worker       TEXT,
    lease_id     TEXT,
    leased_until BIGINT,
    finished_at  BIGINT,
    outcome      TEXT
);
CREATE INDEX sandbox_jobs_waiting ON sandbox_jobs (finished_at, created_at);

-- The hosts that may run sandbox jobs: each has its own token (stored as a SHA-256 hash),
-- which may claim sandbox jobs and report their outcome and nothing else.
CREATE TABLE sandbox_workers (
    name         TEXT PRIMARY KEY,
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   BIGINT NOT NULL,
    revoked_at   BIGINT,
    last_seen_at BIGINT,
    jobs_done    BIGINT NOT NULL DEFAULT 0
);

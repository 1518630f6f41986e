-- The crew's hand-offs and heartbeats. A task is stored with its sender, its addressee and
-- the SHA-256 of its exact body; `dedupe_key` makes sending the same hand-off twice a no-op.
CREATE TABLE crew_tasks (
    id TEXT PRIMARY KEY,
    dedupe_key TEXT NOT NULL UNIQUE,
    bug_id TEXT,
    kind TEXT NOT NULL,
    sender TEXT NOT NULL,
    addressed_to TEXT NOT NULL,
    body TEXT NOT NULL,
    body_sha256 TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    accepted_at BIGINT,
    completed_at BIGINT,
    outcome TEXT
);
CREATE INDEX crew_tasks_open ON crew_tasks (addressed_to, accepted_at);
CREATE INDEX crew_tasks_by_time ON crew_tasks (created_at);

CREATE TABLE crew_heartbeats (
    role TEXT PRIMARY KEY,
    last_seen_at BIGINT NOT NULL,
    detail TEXT NOT NULL
);

-- What the concierge delivered. `notices` is the reporter's tracking-page inbox: one row per
-- outbox job (its idempotency key), so a job delivered twice shows once. `notice_deliveries`
-- records each channel that went through (inbox, email, webhook), so a retried job repeats
-- none of them.
CREATE TABLE notices (
    idempotency_key TEXT PRIMARY KEY,
    report_id       TEXT NOT NULL REFERENCES reports (id),
    bug_id          TEXT,
    kind            TEXT NOT NULL,
    subject         TEXT NOT NULL,
    body            TEXT NOT NULL,
    delivered_at    BIGINT NOT NULL
);
CREATE INDEX notices_by_report ON notices (report_id, delivered_at);

CREATE TABLE notice_deliveries (
    idempotency_key TEXT NOT NULL,
    channel         TEXT NOT NULL CHECK (channel IN ('inbox', 'email', 'webhook')),
    delivered_at    BIGINT NOT NULL,
    detail          TEXT NOT NULL,
    PRIMARY KEY (idempotency_key, channel)
);

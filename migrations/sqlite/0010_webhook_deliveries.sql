-- Signed webhooks the desk accepted, one row per body. The signature covers the body, not
-- the delivery id, so a captured body re-sent under a fresh `X-GitHub-Delivery` must be
-- recognised by the body itself: the SHA-256 of the raw signed bytes is the key, and the
-- delivery id stays unique too (GitHub's own redelivery reuses both). Written in the same
-- transaction as the job that applies the event. `outcome` is what applying it did, or why a
-- review did not count (written by the worker; NULL until then).
CREATE TABLE webhook_deliveries (
    source       TEXT NOT NULL,
    body_sha256  TEXT NOT NULL,
    delivery     TEXT NOT NULL,
    event        TEXT NOT NULL,
    job_key      TEXT NOT NULL,
    received_at  BIGINT NOT NULL,
    outcome      TEXT,
    applied_at   BIGINT,
    PRIMARY KEY (source, body_sha256),
    UNIQUE (source, delivery)
);
CREATE INDEX webhook_deliveries_by_job ON webhook_deliveries (job_key);

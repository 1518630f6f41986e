-- Reports: what the airlock let through (a redacted dossier) or only the metadata of what it
-- quarantined. No raw text is ever stored: raw_sha256 recognises a repeat submission, and
-- capability_hash is the SHA-256 of the reporter's private link secret (never the secret).
CREATE TABLE reports (
    id              TEXT PRIMARY KEY,
    bug_id          TEXT REFERENCES bugs (id),
    capability_hash TEXT NOT NULL UNIQUE,
    component       TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('admitted', 'quarantined')),
    families        TEXT NOT NULL,
    raw_sha256      TEXT NOT NULL,
    dossier         TEXT,
    opens_bug       BIGINT NOT NULL DEFAULT 0,
    repeat_of       TEXT,
    contact         TEXT,
    created_at      BIGINT NOT NULL,
    CHECK ((status = 'admitted' AND dossier IS NOT NULL AND bug_id IS NOT NULL)
        OR (status = 'quarantined' AND dossier IS NULL AND bug_id IS NULL))
);
CREATE INDEX reports_by_bug ON reports (bug_id);
CREATE INDEX reports_by_raw ON reports (raw_sha256);
CREATE INDEX reports_opening ON reports (component, opens_bug);
CREATE INDEX reports_by_status ON reports (status, created_at);

-- What owners tell a reporter through their private link (a quarantined report's only
-- channel back).
CREATE TABLE report_messages (
    report_id  TEXT NOT NULL REFERENCES reports (id),
    seq        BIGINT NOT NULL,
    author     TEXT NOT NULL,
    body       TEXT NOT NULL,
    at         BIGINT NOT NULL,
    PRIMARY KEY (report_id, seq)
);

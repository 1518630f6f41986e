-- An owner marked a quarantined report handled: it leaves the desk's queue, and who did it
-- and when is kept (the report itself, which holds no text, is never changed).
CREATE TABLE quarantine_handled (
    report_id  TEXT PRIMARY KEY REFERENCES reports (id),
    owner_id   TEXT NOT NULL,
    at         BIGINT NOT NULL
);

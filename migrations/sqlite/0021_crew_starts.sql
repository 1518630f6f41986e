-- A stranger's budget: when the crew starts on each new bug, by the address that filed its
-- first report (a SHA-256 of the rate-limit key, never the address) and component. At most
-- R2R_STRANGER_BUGS_PER_HOUR new bugs of one address and component start in any hour; the
-- others are kept and start later, in turn (their triage job waits until `start_at`).
CREATE TABLE crew_starts (
    bug_id      TEXT PRIMARY KEY,
    client_hash TEXT NOT NULL,
    component   TEXT NOT NULL,
    start_at    BIGINT NOT NULL
);
CREATE INDEX crew_starts_by_client ON crew_starts (client_hash, component, start_at);

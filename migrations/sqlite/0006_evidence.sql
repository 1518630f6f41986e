-- Evidence the desk measured itself (its own sandbox re-run of a proposed reproduction,
-- later the fixer's checks): what ran, where, with which result and output. Append-only:
-- the ledger's events point at these rows by id.
CREATE TABLE evidence (
    id TEXT PRIMARY KEY,
    bug_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    label TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX evidence_by_bug ON evidence (bug_id, created_at);

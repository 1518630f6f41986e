-- Owner sessions, invitations and the crew roles' bearer tokens. Every secret is stored only
-- as its SHA-256: a stolen database holds no usable session, invite or token.
CREATE TABLE owner_sessions (
    token_hash TEXT PRIMARY KEY,
    owner_id   TEXT NOT NULL REFERENCES owners (id),
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX owner_sessions_by_owner ON owner_sessions (owner_id);

CREATE TABLE owner_invites (
    token_hash TEXT PRIMARY KEY,
    invited_by TEXT NOT NULL REFERENCES owners (id),
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT,
    used_by    TEXT
);

CREATE TABLE role_tokens (
    role       TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL,
    rotated_at BIGINT NOT NULL
);

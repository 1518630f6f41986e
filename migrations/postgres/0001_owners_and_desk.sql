-- The desk itself: one row that names this installation.
CREATE TABLE desk_instance (
    singleton  SMALLINT PRIMARY KEY CHECK (singleton = 1),
    instance_id TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

-- People who work the desk. Passwords are argon2 PHC strings, never plain text.
CREATE TABLE owners (
    id            TEXT PRIMARY KEY,
    email         TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_at    BIGINT NOT NULL
);

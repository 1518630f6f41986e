-- Servers on one database: each `r2r serve` process is an instance with an id, the address
-- other servers reach it at, and a heartbeat. A leadership is a named job only one instance
-- may do at a time (the deployer and recorder of a service: `deployer:<service>`), held
-- until `until` and renewed by its holder's heartbeat; a holder that stops beating loses it
-- within seconds to the next instance that asks.
CREATE TABLE instances (
    id         TEXT PRIMARY KEY,
    host       TEXT NOT NULL,
    pid        BIGINT NOT NULL,
    address    TEXT NOT NULL,
    started_at BIGINT NOT NULL,
    beat_at    BIGINT NOT NULL
);
CREATE TABLE leaders (
    name    TEXT PRIMARY KEY,
    holder  TEXT NOT NULL,
    address TEXT NOT NULL,
    until   BIGINT NOT NULL
);

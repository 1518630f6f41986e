-- Owners added by invitation once a desk has two owners wait for a second owner's
-- confirmation (`pending`), and who invited and who confirmed each owner is kept. Every
-- owner's creation and confirmation is an event in its own hash chain, append-only like the
-- bugs' audit trail.
ALTER TABLE owners ADD COLUMN status TEXT NOT NULL DEFAULT 'active';
ALTER TABLE owners ADD COLUMN invited_by TEXT;
ALTER TABLE owners ADD COLUMN confirmed_by TEXT;

CREATE TABLE owner_events (
    seq        BIGINT PRIMARY KEY,
    kind       TEXT NOT NULL,
    actor_kind TEXT NOT NULL,
    actor_id   TEXT NOT NULL,
    at         BIGINT NOT NULL,
    body       TEXT NOT NULL,
    prev_hash  TEXT NOT NULL,
    hash       TEXT NOT NULL
);

CREATE FUNCTION r2r_owner_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'owner events are append-only';
END
$$;
CREATE TRIGGER owner_events_append_only BEFORE UPDATE OR DELETE ON owner_events
    FOR EACH ROW EXECUTE FUNCTION r2r_owner_events_append_only();

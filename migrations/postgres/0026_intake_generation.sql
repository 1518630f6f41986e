-- How many intake batches have committed, across every server on the database. A server
-- keeps the open clusters in memory while no other server filed since its own last batch (the
-- number it saw is one less than the one its next batch takes); otherwise it asks the
-- database, as before.
CREATE TABLE intake_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation BIGINT NOT NULL
);
INSERT INTO intake_generation (id, generation) VALUES (1, 0);

-- The same table as on PostgreSQL, where servers sharing a database count their intake
-- batches to know whether their in-memory clusters are still whole. SQLite has one writer
-- process, so it never reads it; it exists to keep both schemas at one version.
CREATE TABLE intake_generation (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    generation INTEGER NOT NULL
);
INSERT INTO intake_generation (id, generation) VALUES (1, 0);

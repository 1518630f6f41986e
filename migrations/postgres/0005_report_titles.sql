-- The title terms of each admitted report (sorted, space-separated), so clustering compares
-- one short column per open bug instead of parsing its dossier and re-deriving the terms
-- inside the intake transaction.
ALTER TABLE reports ADD COLUMN title_terms TEXT;

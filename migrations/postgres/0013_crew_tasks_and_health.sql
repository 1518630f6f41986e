-- The crew's tasks of one bug, for the manager's reconciliation and the bug's page.
CREATE INDEX crew_tasks_by_bug ON crew_tasks (bug_id, created_at);

-- Health's write probe: one small row written and the older removed, so a database that
-- refuses writes (a full disk) shows in /api/health while reads still answer.
CREATE TABLE health_probe (
    at   BIGINT NOT NULL,
    pad  TEXT NOT NULL
);

-- Intake compares a new report only with the open clusters that share a title term with it.
-- fastupdate off: new terms go straight into the index, so a search never scans a pending
-- list that grows with every report until the next vacuum.
CREATE INDEX reports_title_terms ON reports USING GIN ((string_to_array(title_terms, ' ')))
    WITH (fastupdate = off) WHERE opens_bug = 1;

-- What an open desk page polls to know that something changed: how many bugs and the sum of
-- their versions, read from this index alone (not from every bug's document).
CREATE INDEX bugs_by_version ON bugs (version);
-- And the reports filed before terms were stored, looked up apart.
CREATE INDEX reports_untermed ON reports (component) WHERE title_terms IS NULL AND opens_bug = 1;

-- GitHub deployments the desk did not record because the project's required checks were not
-- green on their commit: kept, so that when those checks complete (a check_suite or
-- check_run event for that commit) the latest one is looked at again and recorded once they
-- are green — never forgotten, never recorded red.
CREATE TABLE held_deployments (
    id          TEXT PRIMARY KEY,
    repository  TEXT NOT NULL,
    commit_sha  TEXT NOT NULL,
    held_at     BIGINT NOT NULL,
    why         TEXT NOT NULL
);
CREATE INDEX held_deployments_by_commit ON held_deployments (repository, commit_sha);

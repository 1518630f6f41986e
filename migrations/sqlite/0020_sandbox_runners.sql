-- Who measured what, and how much the desk believes it. A proof-bearing run a worker host
-- reports (a reproduction, a fix candidate's suite) is run again by a second, independent
-- worker before it moves a bug: the confirming job names the worker it must not go to. An
-- owner who stops trusting a worker marks it distrusted: its token ends with the mark, and
-- the bugs whose evidence it measured are measured again.
ALTER TABLE sandbox_jobs ADD COLUMN excluded_worker TEXT;
-- The workers that held the job and let their lease lapse (",a,b,"): none of them claims it
-- again, and a job given up names them.
ALTER TABLE sandbox_jobs ADD COLUMN lapsed_workers TEXT;
ALTER TABLE sandbox_workers ADD COLUMN distrusted_at BIGINT;

-- The bugs already measured again after a worker was distrusted (one row a bug and worker):
-- the desk's sweep goes through each distrusted worker's evidence once.
CREATE TABLE evidence_distrust (
    bug_id     TEXT NOT NULL,
    worker     TEXT NOT NULL,
    settled_at BIGINT NOT NULL,
    PRIMARY KEY (bug_id, worker)
);

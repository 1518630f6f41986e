-- Every model call names the bug it works on, so the spend guard can hold a per-bug budget
-- (R2R_SPEND_PER_BUG) and the desk can show what each bug cost. Calls booked before this
-- migration belong to no bug.
ALTER TABLE model_calls ADD COLUMN bug_id TEXT;
CREATE INDEX model_calls_by_bug ON model_calls (bug_id);

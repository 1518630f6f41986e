-- What waits for work is woken at commit (LISTEN r2r_work), whoever added it: this server,
-- another server on the same database, a command-line tool. Work: a bug changed (the crew's
-- manager acts on it), a crew task was sent, a sandbox job or an outbox job was queued.
CREATE FUNCTION r2r_notify_work() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('r2r_work', TG_TABLE_NAME);
    RETURN NULL;
END;
$$;

CREATE TRIGGER bugs_work AFTER INSERT OR UPDATE ON bugs
    FOR EACH STATEMENT EXECUTE FUNCTION r2r_notify_work();
CREATE TRIGGER crew_tasks_work AFTER INSERT ON crew_tasks
    FOR EACH STATEMENT EXECUTE FUNCTION r2r_notify_work();
CREATE TRIGGER sandbox_jobs_work AFTER INSERT ON sandbox_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION r2r_notify_work();
CREATE TRIGGER outbox_jobs_work AFTER INSERT OR UPDATE OF available_at ON outbox_jobs
    FOR EACH STATEMENT EXECUTE FUNCTION r2r_notify_work();

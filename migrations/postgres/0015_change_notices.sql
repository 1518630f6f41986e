-- Open desk pages are told at commit that something they show changed (LISTEN r2r_changes),
-- whoever wrote it: this server, another server on the same database, a command-line tool.
-- What the pages show: bugs (a version moves with every change), the quarantine queue and
-- what each crew role says it is doing. A heartbeat that says the same as before is silent.
CREATE FUNCTION r2r_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('r2r_changes', TG_TABLE_NAME);
    RETURN NULL;
END;
$$;

CREATE TRIGGER bugs_changed AFTER INSERT OR UPDATE OR DELETE ON bugs
    FOR EACH STATEMENT EXECUTE FUNCTION r2r_notify_change();
CREATE TRIGGER report_quarantined AFTER INSERT ON reports
    FOR EACH ROW WHEN (NEW.status = 'quarantined') EXECUTE FUNCTION r2r_notify_change();
CREATE TRIGGER quarantine_handled_changed AFTER INSERT OR DELETE ON quarantine_handled
    FOR EACH STATEMENT EXECUTE FUNCTION r2r_notify_change();
CREATE TRIGGER crew_role_started AFTER INSERT ON crew_heartbeats
    FOR EACH ROW EXECUTE FUNCTION r2r_notify_change();
CREATE TRIGGER crew_role_doing AFTER UPDATE ON crew_heartbeats
    FOR EACH ROW WHEN (OLD.detail IS DISTINCT FROM NEW.detail)
    EXECUTE FUNCTION r2r_notify_change();

-- Projects: the targets one desk serves beside the one the environment configures. Each row
-- is one owner-managed definition (domain::project::ProjectSpec as JSON); who changed it
-- last and when are kept beside it.
CREATE TABLE projects (
    id TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    updated_by TEXT NOT NULL
);

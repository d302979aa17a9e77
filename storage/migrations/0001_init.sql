-- Tenants and their API tokens (only the SHA-256 of a token is stored).
CREATE TABLE tenants (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);

CREATE TABLE tokens (
    hash       TEXT PRIMARY KEY,
    tenant_id  INTEGER NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    created_at TEXT NOT NULL
);

-- The shared file storage: one row per tenant and normalised path; the
-- bytes live in the content-addressed blob folder under their sha256.
CREATE TABLE files (
    tenant_id   INTEGER NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    path        TEXT NOT NULL,
    size        INTEGER NOT NULL,
    sha256      TEXT NOT NULL,
    uploaded_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, path)
);

-- Tool groups: the raw YAML and the last computed status report.
-- generation grows with every change of the definition or of a listed
-- file; background work records its outcome only for the generation it
-- worked on.
CREATE TABLE groups (
    tenant_id   INTEGER NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    yaml        BLOB NOT NULL,
    status      TEXT NOT NULL,
    report      TEXT NOT NULL,
    generation  INTEGER NOT NULL,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (tenant_id, name)
);

CREATE INDEX groups_status ON groups(status);

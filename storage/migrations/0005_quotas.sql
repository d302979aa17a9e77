-- Per-tenant quota overrides (JSON of storage.Quota; zero fields take the
-- server's defaults).
CREATE TABLE tenant_quotas (
    tenant_id  INTEGER PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    quota      TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS logs_tenant ON logs(tenant_id, id);

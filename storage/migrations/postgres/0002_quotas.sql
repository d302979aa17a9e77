-- Per-tenant quota overrides (JSON of storage.Quota; zero fields take the
-- server's defaults).
CREATE TABLE tenant_quotas (
    tenant_id  BIGINT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    quota      TEXT NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL
);

-- Tenant secrets, sealed with AES-256-GCM under the server's key (never
-- stored here): key_id names that key, size is the sealed bytes (counted
-- in the storage quota).
CREATE TABLE secrets (
    tenant_id  BIGINT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name       TEXT COLLATE "C" NOT NULL,
    sealed     BYTEA NOT NULL,
    key_id     TEXT NOT NULL,
    size       BIGINT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (tenant_id, name)
);

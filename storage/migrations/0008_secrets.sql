-- Tenant secrets, sealed with AES-256-GCM under the server's key (never
-- stored here): key_id names that key, size is the sealed bytes (counted
-- in the storage quota).
CREATE TABLE secrets (
    tenant_id  INTEGER NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    sealed     BLOB NOT NULL,
    key_id     TEXT NOT NULL,
    size       INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, name)
);

-- The idempotency ledger: the first call's answer per key, failures
-- included, kept until expires_at. A 'running' row is a call in progress.
CREATE TABLE idempotency (
    tenant_id    INTEGER NOT NULL,
    key          TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    state        TEXT NOT NULL,
    response     BLOB,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    PRIMARY KEY (tenant_id, key)
);

-- Continuations of paged tables: the tool and the arguments of the next
-- page.
CREATE TABLE continuations (
    id         TEXT PRIMARY KEY,
    tenant_id  INTEGER NOT NULL,
    group_name TEXT NOT NULL,
    tool       TEXT NOT NULL,
    arguments  TEXT NOT NULL,
    session_id TEXT NOT NULL,
    expires_at TEXT NOT NULL
);

-- allowed_tool_tags of a session (JSON list).
ALTER TABLE sessions ADD COLUMN allowed_tags TEXT NOT NULL DEFAULT 'null';

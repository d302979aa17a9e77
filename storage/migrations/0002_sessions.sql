-- Agents: the raw YAML, checked against the tenant's groups on upload.
CREATE TABLE agents (
    tenant_id  INTEGER NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    yaml       BLOB NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (tenant_id, name)
);

-- Sessions of an agent, with their variables (JSON) and current state.
CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    tenant_id   INTEGER NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    agent       TEXT NOT NULL,
    state       TEXT NOT NULL,
    variables   TEXT NOT NULL,
    closed      INTEGER NOT NULL DEFAULT 0,
    created_at  TEXT NOT NULL,
    finished_at TEXT
);

-- Outgoing chat messages (SendChatMessage).
CREATE TABLE messages (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    text       TEXT NOT NULL,
    created_at TEXT NOT NULL
);

-- Questions the agent could not answer (ReportUnansweredQuestion).
CREATE TABLE unanswered (
    id         INTEGER PRIMARY KEY,
    tenant_id  INTEGER NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    session_id TEXT NOT NULL,
    question   TEXT NOT NULL,
    created_at TEXT NOT NULL
);

-- Knowledge documents (TriggerKBSearch); the full-text index is an FTS5
-- table made on first use.
CREATE TABLE knowledge (
    id         INTEGER PRIMARY KEY,
    tenant_id  INTEGER NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    content    TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (tenant_id, name)
);

-- System and trace logs of sessions.
CREATE TABLE logs (
    id         INTEGER PRIMARY KEY,
    tenant_id  INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    kind       TEXT NOT NULL,
    event      TEXT NOT NULL,
    data       TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX logs_session ON logs(session_id, id);
CREATE INDEX logs_created ON logs(created_at);

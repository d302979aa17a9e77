-- Listing a tenant's newest sessions (GET /v1/sessions) and unanswered
-- questions (GET /v1/unanswered) without scanning every tenant's rows.
CREATE INDEX IF NOT EXISTS sessions_tenant ON sessions(tenant_id, created_at);
CREATE INDEX IF NOT EXISTS unanswered_tenant ON unanswered(tenant_id, id);

-- The number of passages of a knowledge document, counted when it is
-- stored, so that listing documents does not read their text (NULL for
-- documents stored before: those are counted when listed).
ALTER TABLE knowledge ADD COLUMN passages INTEGER;

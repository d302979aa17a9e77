-- Knowledge search matches word forms (issue 26): passages are indexed
-- with the 'english' configuration (words lowercased and stemmed, so that
-- "refund" finds "refunds"), as SQLite's FTS5 index uses porter. The
-- generated column is made again, which recomputes it for every passage.
DROP INDEX IF EXISTS knowledge_passages_tsv;
ALTER TABLE knowledge_passages DROP COLUMN tsv;
ALTER TABLE knowledge_passages ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED;
CREATE INDEX knowledge_passages_tsv ON knowledge_passages USING GIN (tsv);

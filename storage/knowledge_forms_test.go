package storage

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// Knowledge search matches word forms: a query's words and the passages'
// are stemmed alike (FTS5's porter on SQLite, 'english' on PostgreSQL).
func TestKnowledgeWordForms(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		db := open(t, t.TempDir())
		tn, _, _ := db.CreateTenant(ctx, "a")
		if err := db.PutKnowledge(ctx, tn.ID, "faq", "Refunds take five business days.\n\nThe office opened in 2001.\n\nShipping is free for parcels."); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			query, want string // want: the first passage's source, "" for none
		}{
			{"refund", "faq#1"},
			{"refunds", "faq#1"},
			{"refunding", "faq#1"},
			{"taking", "faq#1"},
			{"open", "faq#2"},
			{"opens", "faq#2"},
			{"ships", "faq#3"},
			{"parcel", "faq#3"},
			{"REFUND", "faq#1"},
			{"zebra", ""},
		}
		for _, tt := range tests {
			ps, err := db.SearchKnowledge(ctx, tn.ID, []string{"faq"}, tt.query, 5)
			if err != nil {
				t.Fatalf("%q: %v", tt.query, err)
			}
			got := ""
			if len(ps) > 0 {
				got = ps[0].Source
			}
			if got != tt.want {
				t.Errorf("%q finds %q (%+v), want %q", tt.query, got, ps, tt.want)
			}
		}
	})
}

// A database whose index was made before stemming (SQLite: an FTS5 table
// of unicode61 alone; PostgreSQL: a 'simple' tsvector) is migrated when it
// is opened: its documents are found by their word forms.
func TestKnowledgeIndexMigrated(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		dir := t.TempDir()
		db := open(t, dir)
		tn, _, _ := db.CreateTenant(ctx, "a")
		if err := db.PutKnowledge(ctx, tn.ID, "faq", "Refunds take five business days."); err != nil {
			t.Fatal(err)
		}
		// The index as the former code made it.
		var old []string
		if db.dialect == postgresDialect {
			old = []string{`DROP INDEX knowledge_passages_tsv`, `ALTER TABLE knowledge_passages DROP COLUMN tsv`,
				`ALTER TABLE knowledge_passages ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED`,
				`CREATE INDEX knowledge_passages_tsv ON knowledge_passages USING GIN (tsv)`,
				`DELETE FROM schema_migrations WHERE name LIKE '%knowledge_english%'`}
		} else {
			old = []string{`DROP TABLE knowledge_fts`,
				`CREATE VIRTUAL TABLE knowledge_fts USING fts5(name UNINDEXED, tenant_id UNINDEXED, content, tokenize='unicode61')`,
				`INSERT INTO knowledge_fts (name, tenant_id, content) VALUES ('faq#1', ` + strconv.FormatInt(tn.ID, 10) + `, 'Refunds take five business days.')`}
		}
		for _, q := range old {
			if _, err := db.sql.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		db.Close()
		db = open(t, dir)
		ps, err := db.SearchKnowledge(ctx, tn.ID, nil, "refund", 5)
		if err != nil || len(ps) != 1 || ps[0].Source != "faq#1" || !strings.Contains(ps[0].Text, "five business days") {
			t.Errorf("after the migration, refund finds %+v %v", ps, err)
		}
		if ps, _ := db.SearchKnowledge(ctx, tn.ID, nil, "refunds", 5); len(ps) != 1 {
			t.Errorf("after the migration, refunds finds %+v (a passage once)", ps)
		}
	})
}

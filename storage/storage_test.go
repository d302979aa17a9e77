package storage

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTenantsAndTokens(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		db := open(t, t.TempDir())
		a, tokA, err := db.CreateTenant(ctx, "acme")
		if err != nil || !strings.HasPrefix(tokA, "th_") || len(tokA) != 67 {
			t.Fatalf("create: %v %q", err, tokA)
		}
		if _, _, err := db.CreateTenant(ctx, "acme"); !errors.Is(err, ErrExists) {
			t.Errorf("duplicate tenant: %v", err)
		}
		if _, _, err := db.CreateTenant(ctx, "  "); err == nil {
			t.Error("a blank name was accepted")
		}
		b, tokB, _ := db.CreateTenant(ctx, "beta")
		for tok, want := range map[string]int64{tokA: a.ID, tokB: b.ID} {
			got, err := db.TenantByToken(ctx, tok)
			if err != nil || got.ID != want {
				t.Errorf("TenantByToken = %v, %v; want %d", got, err, want)
			}
		}
		if _, err := db.TenantByToken(ctx, "th_nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("unknown token: %v", err)
		}
		extra, _ := db.AddToken(ctx, a.ID)
		if got, _ := db.TenantByToken(ctx, extra); got.ID != a.ID {
			t.Error("added token does not work")
		}
		if n, _ := db.TokenCount(ctx, a.ID); n != 2 {
			t.Errorf("acme has %d tokens, want 2", n)
		}
		// Revoking one token leaves the tenant's other tokens working.
		if got, err := db.RevokeToken(ctx, tokA); err != nil || got.ID != a.ID {
			t.Errorf("revoke = %v, %v", got, err)
		}
		if _, err := db.TenantByToken(ctx, tokA); !errors.Is(err, ErrNotFound) {
			t.Errorf("a revoked token still works: %v", err)
		}
		if got, _ := db.TenantByToken(ctx, extra); got.ID != a.ID {
			t.Error("revoking one token broke another")
		}
		if _, err := db.RevokeToken(ctx, tokA); !errors.Is(err, ErrNotFound) {
			t.Errorf("revoking twice: %v", err)
		}
		if n, _ := db.TokenCount(ctx, a.ID); n != 1 {
			t.Errorf("acme has %d tokens after revoking one, want 1", n)
		}
		// Only hashes are stored.
		var n int
		db.row(context.Background(), `SELECT count(*) FROM tokens WHERE hash = ?`, tokA).Scan(&n)
		if n != 0 {
			t.Error("a token is stored in clear")
		}
	})
}

func TestFiles(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		dir := t.TempDir()
		db := open(t, dir)
		a, _, _ := db.CreateTenant(ctx, "a")
		b, _, _ := db.CreateTenant(ctx, "b")
		fi, err := db.PutFile(ctx, a.ID, "sub/m.py", strings.NewReader("x = 1\n"), 100)
		if err != nil || fi.Size != 6 || len(fi.SHA256) != 64 {
			t.Fatalf("put: %+v %v", fi, err)
		}
		if got, _ := os.ReadFile(db.BlobPath(fi.SHA256)); string(got) != "x = 1\n" {
			t.Errorf("blob = %q", got)
		}
		// Replace; and a body over the limit changes nothing.
		if _, err := db.PutFile(ctx, a.ID, "sub/m.py", strings.NewReader("x = 2\n"), 100); err != nil {
			t.Fatal(err)
		}
		if _, err := db.PutFile(ctx, a.ID, "sub/m.py", strings.NewReader(strings.Repeat("y", 101)), 100); !errors.Is(err, ErrTooLarge) {
			t.Errorf("too large: %v", err)
		}
		got, _ := db.File(ctx, a.ID, "sub/m.py")
		if b2, _ := os.ReadFile(db.BlobPath(got.SHA256)); string(b2) != "x = 2\n" {
			t.Errorf("after a refused upload the file is %q", b2)
		}
		// Tenants do not see each other's files.
		if _, err := db.File(ctx, b.ID, "sub/m.py"); !errors.Is(err, ErrNotFound) {
			t.Errorf("tenant b sees a's file: %v", err)
		}
		if list, _ := db.Files(ctx, b.ID); len(list) != 0 {
			t.Errorf("tenant b lists %v", list)
		}
		if list, _ := db.Files(ctx, a.ID); len(list) != 1 || list[0].Path != "sub/m.py" {
			t.Errorf("list = %v", list)
		}
		if err := db.DeleteFile(ctx, a.ID, "sub/m.py"); err != nil {
			t.Fatal(err)
		}
		if err := db.DeleteFile(ctx, a.ID, "sub/m.py"); !errors.Is(err, ErrNotFound) {
			t.Errorf("second delete: %v", err)
		}
		// A crash mid-upload leaves a temporary file; reopening removes it.
		os.WriteFile(filepath.Join(dir, "blobs", "tmp", "upload-123"), []byte("half"), 0o644)
		db.Close()
		db2 := open(t, dir)
		if left, _ := filepath.Glob(filepath.Join(dir, "blobs", "tmp", "*")); len(left) != 0 {
			t.Errorf("left after reopen: %v", left)
		}
		if _, err := db2.TenantByName(ctx, "a"); err != nil {
			t.Errorf("tenant lost across reopen: %v", err)
		}
	})
}

func TestGroupsAndGenerations(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		db := open(t, t.TempDir())
		a, _, _ := db.CreateTenant(ctx, "a")
		gen, err := db.PutGroup(ctx, a.ID, Group{Name: "G", YAML: []byte("kind: Plugin"), Status: "Installing", Report: "{}"})
		if err != nil || gen != 1 {
			t.Fatalf("put: %d %v", gen, err)
		}
		// A background job finishing for generation 1 applies...
		if _, ok, _ := db.SetGroupStatus(ctx, a.ID, "G", 1, "Ready", `{"r":1}`); !ok {
			t.Error("status for the current generation was not applied")
		}
		// ...but not once the group has changed.
		gen2, _ := db.PutGroup(ctx, a.ID, Group{Name: "G", YAML: []byte("kind: Plugin\n"), Status: "Installing", Report: "{}"})
		if gen2 != 2 {
			t.Fatalf("generation after replace = %d", gen2)
		}
		if _, ok, _ := db.SetGroupStatus(ctx, a.ID, "G", 1, "Error", `{}`); ok {
			t.Error("a stale job overwrote a newer status")
		}
		if gen3, ok, _ := db.SetGroupStatus(ctx, a.ID, "G", 0, "Incomplete", `{}`); !ok || gen3 != 3 {
			t.Errorf("unconditional status: %d %v", gen3, ok)
		}
		g, _ := db.Group(ctx, a.ID, "G")
		if g.Status != "Incomplete" || g.Generation != 3 || string(g.YAML) != "kind: Plugin\n" {
			t.Errorf("group = %+v", g)
		}
		if gs, _ := db.Groups(ctx, a.ID); len(gs) != 1 {
			t.Errorf("groups = %v", gs)
		}
		if err := db.DeleteGroup(ctx, a.ID, "G"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Group(ctx, a.ID, "G"); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleted group: %v", err)
		}
	})
}

func TestMigrationsRunOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		dir := t.TempDir()
		open(t, dir).Close()
		db := open(t, dir)
		var n int
		db.row(context.Background(), `SELECT count(*) FROM schema_migrations`).Scan(&n)
		pattern := "migrations/*.sql"
		if db.Backend() == "postgres" {
			pattern = "migrations/postgres/*.sql"
		}
		files, _ := fs.Glob(migrations, pattern)
		if n != len(files) || n < 1 {
			t.Errorf("%d migrations recorded, %d embedded", n, len(files))
		}
		if db.Backend() == "postgres" {
			return
		}
		var mode string
		db.row(context.Background(), `PRAGMA journal_mode`).Scan(&mode)
		if mode != "wal" {
			t.Errorf("journal mode %q", mode)
		}
	})
}

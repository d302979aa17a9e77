package storage

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

// TestQuotas: each limit refuses what would exceed it with a QuotaError
// and stores nothing; replacing within the limit is allowed; overrides
// take precedence over defaults and survive a reopen.
func TestQuotas(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		dir := t.TempDir()
		db := open(t, dir)
		db.SetQuotaDefaults(Quota{StorageBytes: 100, Groups: 2, Agents: 1, LogBytes: 1000})
		a, _, _ := db.CreateTenant(ctx, "a")
		b, _, _ := db.CreateTenant(ctx, "b")
		put := func(tenant int64, path string, n int) error {
			_, err := db.PutFile(ctx, tenant, path, strings.NewReader(strings.Repeat("x", n)), 1000)
			return err
		}
		quotaErr := func(err error, resource string, used, allowed int64) bool {
			var qe *QuotaError
			return errors.As(err, &qe) && errors.Is(err, ErrQuota) && qe.Resource == resource && qe.Used == used && qe.Allowed == allowed
		}
		steps := []struct {
			name string
			do   func() error
			ok   bool
			used int64 // when refused: the Used it reports
		}{
			{"a file within", func() error { return put(a.ID, "one", 60) }, true, 0},
			{"a second file past it", func() error { return put(a.ID, "two", 41) }, false, 60},
			{"a second file to the byte", func() error { return put(a.ID, "two", 40) }, true, 0},
			{"replacing a file with a smaller one", func() error { return put(a.ID, "one", 10) }, true, 0},
			{"knowledge past it", func() error { return db.PutKnowledge(ctx, a.ID, "doc", strings.Repeat("w ", 26)) }, false, 50},
			{"knowledge within", func() error { return db.PutKnowledge(ctx, a.ID, "doc", strings.Repeat("w ", 25)) }, true, 0},
			{"another tenant is not counted", func() error { return put(b.ID, "one", 100) }, true, 0},
		}
		for _, st := range steps {
			err := st.do()
			if st.ok && err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			if !st.ok && !quotaErr(err, "storage_bytes", st.used, 100) {
				t.Fatalf("%s: %v, want a storage quota error with %d used", st.name, err, st.used)
			}
		}
		if _, err := db.File(ctx, a.ID, "two"); err != nil {
			t.Fatal(err)
		}
		if u, _ := db.Usage(ctx, a.ID); u.StorageBytes != 100 || u.FileBytes != 50 || u.KnowledgeBytes != 50 || u.Files != 2 {
			t.Errorf("usage = %+v", u)
		}
		// A refused upload stored nothing: the file keeps its old bytes.
		if err := put(a.ID, "two", 95); !quotaErr(err, "storage_bytes", 60, 100) {
			t.Fatalf("replacing past the quota: %v", err)
		}
		if f, _ := db.File(ctx, a.ID, "two"); f.Size != 40 {
			t.Errorf("a refused replacement changed the file: %+v", f)
		}
		// Counts: a new name past the quota is refused, a replacement is not.
		g := func(name string) error {
			_, err := db.PutGroup(ctx, a.ID, Group{Name: name, YAML: []byte("y"), Status: "Invalid", Report: "{}"})
			return err
		}
		if err := g("G1"); err != nil {
			t.Fatal(err)
		}
		if err := g("G2"); err != nil {
			t.Fatal(err)
		}
		if err := g("G3"); !quotaErr(err, "groups", 2, 2) {
			t.Errorf("a third group: %v", err)
		}
		if err := g("G1"); err != nil {
			t.Errorf("replacing a group at the quota: %v", err)
		}
		if err := db.PutAgent(ctx, a.ID, "A1", []byte("y")); err != nil {
			t.Fatal(err)
		}
		if err := db.PutAgent(ctx, a.ID, "A2", []byte("y")); !quotaErr(err, "agents", 1, 1) {
			t.Errorf("a second agent: %v", err)
		}
		// An override lifts a limit for one tenant, and is kept.
		if err := db.SetTenantQuota(ctx, a.ID, Quota{Groups: Unlimited, StorageBytes: 1000}); err != nil {
			t.Fatal(err)
		}
		if err := g("G3"); err != nil {
			t.Errorf("after lifting the groups quota: %v", err)
		}
		if err := put(a.ID, "three", 500); err != nil {
			t.Errorf("after raising the storage quota: %v", err)
		}
		db.Close()
		db = open(t, dir)
		db.SetQuotaDefaults(Quota{StorageBytes: 100, Groups: 2, Agents: 1})
		q, err := db.EffectiveQuota(ctx, a.ID)
		if err != nil || q.Groups != Unlimited || q.StorageBytes != 1000 || q.Agents != 1 {
			t.Errorf("after a reopen: %+v %v", q, err)
		}
		if err := db.SetTenantQuota(ctx, 9999, Quota{Groups: 1}); !errors.Is(err, ErrNotFound) {
			t.Errorf("a quota of no tenant: %v", err)
		}
	})
}

// TestStorageQuotaUnderConcurrentUploads: uploads at once never bring a
// tenant past its quota.
func TestStorageQuotaUnderConcurrentUploads(t *testing.T) {
	forEachBackendNodes(t, func(t *testing.T, open nodes) {
		a, b := open(t)
		ctx := context.Background()
		for _, db := range []*DB{a, b} {
			db.SetQuotaDefaults(Quota{StorageBytes: 1000})
		}
		ten, _, _ := a.CreateTenant(ctx, "t")
		var wg sync.WaitGroup
		for i := 0; i < 16; i++ {
			db := []*DB{a, b}[i%2]
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				_, err := db.PutFile(ctx, ten.ID, "f"+string(rune('a'+i)), strings.NewReader(strings.Repeat("x", 300)), 1000)
				if err != nil && !errors.Is(err, ErrQuota) {
					t.Error(err)
				}
			}(i)
		}
		wg.Wait()
		if u, _ := a.Usage(ctx, ten.ID); u.StorageBytes != 900 || u.Files != 3 {
			t.Errorf("after 16 uploads of 300 bytes at once under a quota of 1000: %+v", u)
		}
	})
}

// TestPruneLogVolume: a tenant's oldest log entries go past its log
// quota; another tenant's stay.
func TestPruneLogVolume(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		db := open(t, t.TempDir())
		a, _, _ := db.CreateTenant(ctx, "a")
		b, _, _ := db.CreateTenant(ctx, "b")
		db.SetTenantQuota(ctx, a.ID, Quota{LogBytes: 100})
		for i := 0; i < 10; i++ {
			for _, ten := range []int64{a.ID, b.ID} {
				if err := db.AddLog(ctx, ten, "s", "system", "e", strings.Repeat("d", 18)); err != nil { // 20 bytes of JSON
					t.Fatal(err)
				}
			}
		}
		n, err := db.PruneLogVolume(ctx)
		if err != nil || n != 5 {
			t.Fatalf("pruned %d, %v; want 5", n, err)
		}
		if u, _ := db.Usage(ctx, a.ID); u.LogBytes != 100 {
			t.Errorf("a keeps %d bytes of logs, want 100", u.LogBytes)
		}
		if u, _ := db.Usage(ctx, b.ID); u.LogBytes != 200 {
			t.Errorf("b keeps %d bytes of logs, want 200", u.LogBytes)
		}
		logs, _ := db.Logs(ctx, a.ID, "s")
		if len(logs) != 5 {
			t.Errorf("a keeps %d entries", len(logs))
		}
	})
}

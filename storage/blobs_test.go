package storage

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestCollectBlobs: only blobs no file of any tenant refers to go; shared
// blobs, open files and links made before the collection keep their bytes.
func TestCollectBlobs(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		type op struct {
			tenant  int // 0 or 1
			path    string
			content string // "" deletes the path
		}
		tests := []struct {
			name      string
			ops       []op
			collected int      // blobs deleted
			kept      []string // contents whose blobs must stay
			gone      []string // contents whose blobs must go
		}{
			{"nothing to collect", []op{{0, "a.py", "A"}, {0, "b.py", "B"}}, 0, []string{"A", "B"}, nil},
			{"replaced file", []op{{0, "a.py", "old"}, {0, "a.py", "new"}}, 1, []string{"new"}, []string{"old"}},
			{"deleted file", []op{{0, "a.py", "A"}, {0, "a.py", ""}}, 1, nil, []string{"A"}},
			{"shared by two paths, one deleted", []op{{0, "a.py", "S"}, {0, "b.py", "S"}, {0, "a.py", ""}}, 0, []string{"S"}, nil},
			{"shared by two tenants, one replaced", []op{{0, "a.py", "S"}, {1, "a.py", "S"}, {0, "a.py", "T"}}, 0, []string{"S", "T"}, nil},
			{"re-uploaded after delete", []op{{0, "a.py", "A"}, {0, "a.py", ""}, {0, "b.py", "A"}}, 0, []string{"A"}, nil},
			{"many", []op{{0, "a", "1"}, {0, "a", "2"}, {0, "a", "3"}, {1, "b", "4"}, {1, "b", ""}}, 3, []string{"3"}, []string{"1", "2", "4"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				db := open(t, t.TempDir())
				var ids [2]int64
				for i := range ids {
					tn, _, _ := db.CreateTenant(ctx, fmt.Sprint("t", i))
					ids[i] = tn.ID
				}
				for _, o := range tt.ops {
					var err error
					if o.content == "" {
						err = db.DeleteFile(ctx, ids[o.tenant], o.path)
					} else {
						_, err = db.PutFile(ctx, ids[o.tenant], o.path, strings.NewReader(o.content), 100)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				// A link and an open file made before the collection.
				var links []string
				var opened []*os.File
				for i, c := range tt.gone {
					l := filepath.Join(t.TempDir(), fmt.Sprint(i))
					if err := os.Link(db.BlobPath(sha256Hex(c)), l); err != nil {
						t.Fatal(err)
					}
					links = append(links, l)
					f, err := os.Open(db.BlobPath(sha256Hex(c)))
					if err != nil {
						t.Fatal(err)
					}
					defer f.Close()
					opened = append(opened, f)
				}
				n, bytes, err := db.CollectBlobs(ctx)
				if err != nil || n != tt.collected {
					t.Fatalf("collected %d (%d bytes), %v; want %d", n, bytes, err, tt.collected)
				}
				for _, c := range tt.kept {
					if b, err := os.ReadFile(db.BlobPath(sha256Hex(c))); err != nil || string(b) != c {
						t.Errorf("blob of %q: %q, %v", c, b, err)
					}
				}
				for i, c := range tt.gone {
					if _, err := os.Stat(db.BlobPath(sha256Hex(c))); !os.IsNotExist(err) {
						t.Errorf("blob of %q is still there: %v", c, err)
					}
					if b, _ := os.ReadFile(links[i]); string(b) != c {
						t.Errorf("link to %q now reads %q", c, b)
					}
					if b, _ := io.ReadAll(opened[i]); string(b) != c {
						t.Errorf("open file of %q now reads %q", c, b)
					}
				}
				// Every file row still has its bytes, and a second pass finds nothing.
				for _, id := range ids {
					fs, _ := db.Files(ctx, id)
					for _, f := range fs {
						if _, err := os.Stat(db.BlobPath(f.SHA256)); err != nil {
							t.Errorf("file %s lost its blob: %v", f.Path, err)
						}
					}
				}
				if n, _, _ := db.CollectBlobs(ctx); n != 0 {
					t.Errorf("second pass collected %d", n)
				}
			})
		}
	})
}

// Foreign names in the blob folder are left alone.
func TestCollectBlobsLeavesForeignFiles(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		db := open(t, t.TempDir())
		foreign := []string{
			filepath.Join(db.blob, "notes.txt"),
			filepath.Join(db.blob, "ab", "not-a-hash"),
			filepath.Join(db.blob, "ab", sha256Hex("x")), // a hash in the wrong shard
		}
		for _, p := range foreign {
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if n, _, err := db.CollectBlobs(context.Background()); err != nil || n != 0 {
			t.Fatalf("collected %d, %v", n, err)
		}
		for _, p := range foreign {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s was removed", p)
			}
		}
	})
}

// Uploads, replacements, reads and collections running together never
// leave a file row without its blob.
func TestCollectBlobsConcurrent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open opener) {
		ctx := context.Background()
		db := open(t, t.TempDir())
		tn, _, _ := db.CreateTenant(ctx, "t")
		const writers, rounds = 4, 60
		var wg sync.WaitGroup
		stop := make(chan struct{})
		errs := make(chan error, writers*rounds+1)
		wg.Add(1)
		go func() { // the collector
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, _, err := db.CollectBlobs(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
		var writersWG sync.WaitGroup
		for w := 0; w < writers; w++ {
			writersWG.Add(1)
			go func() {
				defer writersWG.Done()
				path := fmt.Sprintf("w%d.py", w)
				for r := 0; r < rounds; r++ {
					// Contents repeat so that existing blobs are reused too.
					content := fmt.Sprintf("v%d", r%7)
					if _, err := db.PutFile(ctx, tn.ID, path, strings.NewReader(content), 100); err != nil {
						errs <- err
						return
					}
					_, f, err := db.OpenFile(ctx, tn.ID, path)
					if err != nil {
						errs <- fmt.Errorf("open %s right after upload: %w", path, err)
						return
					}
					f.Close()
				}
			}()
		}
		writersWG.Wait()
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		fs, _ := db.Files(ctx, tn.ID)
		if len(fs) != writers {
			t.Fatalf("%d files, want %d", len(fs), writers)
		}
		for _, f := range fs {
			if _, err := os.Stat(db.BlobPath(f.SHA256)); err != nil {
				t.Errorf("%s lost its blob: %v", f.Path, err)
			}
		}
	})
}

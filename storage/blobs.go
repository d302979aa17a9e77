package storage

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
)

// WithBlobs runs fn while no blob can be collected: a caller that reads a
// file's sha256 and then opens or links its blob does both inside fn.
func (s *DB) WithBlobs(fn func() error) error {
	s.blobMu.RLock()
	defer s.blobMu.RUnlock()
	return fn()
}

// OpenFile finds a tenant's file and opens its bytes. The open file stays
// readable even if CollectBlobs removes the blob afterwards.
func (s *DB) OpenFile(ctx context.Context, tenantID int64, path string) (FileInfo, *os.File, error) {
	s.blobMu.RLock()
	defer s.blobMu.RUnlock()
	fi, err := s.File(ctx, tenantID, path)
	if err != nil {
		return fi, nil, err
	}
	p, err := s.LocalBlob(ctx, fi.SHA256)
	if err != nil {
		return fi, nil, err
	}
	f, err := os.Open(p)
	return fi, f, err
}

// LocalBlob returns the path of the bytes with the given sha256 in this
// node's blob folder; on PostgreSQL it first copies them from the database
// when the folder has no copy yet. Call it inside WithBlobs (or hold the
// path only as long as nothing can collect it).
func (s *DB) LocalBlob(ctx context.Context, sha string) (string, error) {
	p := s.BlobPath(sha)
	if s.dialect != postgresDialect {
		return p, nil
	}
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	return p, s.pgFetchBlob(ctx, sha)
}

// CollectBlobs deletes the blobs no file of any tenant refers to (left by
// replaced and deleted files) and returns how many it deleted from this
// node's folder and their bytes (on PostgreSQL it first deletes them from
// the database, one node at a time). Uploads wait while it runs. Materialised group folders hold
// copies of their blobs, which are not touched.
func (s *DB) CollectBlobs(ctx context.Context) (n int, bytes int64, err error) {
	if s.dialect == postgresDialect {
		if err := s.pgCollectBlobs(ctx); err != nil {
			return 0, 0, err
		}
	}
	s.blobMu.Lock()
	defer s.blobMu.Unlock()
	shas, err := queryAll(ctx, s, []string(nil), func(r *sql.Rows, sha *string) error { return r.Scan(sha) },
		`SELECT DISTINCT sha256 FROM files`)
	if err != nil {
		return 0, 0, err
	}
	live := map[string]bool{}
	for _, sha := range shas {
		live[sha] = true
	}
	shards, err := os.ReadDir(s.blob)
	if err != nil {
		return 0, 0, err
	}
	for _, shard := range shards {
		if !shard.IsDir() || !isHex(shard.Name(), 2) {
			continue // tmp/ and anything that is not ours
		}
		dir := filepath.Join(s.blob, shard.Name())
		blobs, err := os.ReadDir(dir)
		if err != nil {
			return n, bytes, err
		}
		for _, b := range blobs {
			name := b.Name()
			if live[name] || !isHex(name, 64) || name[:2] != shard.Name() {
				continue
			}
			info, err := b.Info()
			if err != nil || !info.Mode().IsRegular() {
				continue
			}
			if err := ctx.Err(); err != nil {
				return n, bytes, err
			}
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return n, bytes, err
			}
			n++
			bytes += info.Size()
		}
		os.Remove(dir) // only succeeds when the shard is empty
	}
	return n, bytes, nil
}

// isHex reports whether s is n lowercase hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

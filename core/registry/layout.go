package registry

// Layout: the folders a group's files are materialised in.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"toolhost/core/definition"
	"toolhost/core/runner"
)

// materialize lays out a group's listed files in a folder of their own,
// named by the hash of (path, content) pairs: copies of the blobs (clones
// where the file system can), built in a temporary folder and renamed into
// place, so a folder, once it exists, is complete and never changes.
//
// Not hard links: blobs are shared by every tenant that stored the same
// bytes, and a link's count and change time, which tool code can stat,
// would tell a tenant that another one holds those bytes in a group.
func (r *Registry) materialize(ctx context.Context, tenant int64, def *definition.Group) (string, error) {
	// No blob may be collected between reading a file's hash and linking it.
	var dir string
	err := r.db.WithBlobs(func() (err error) {
		dir, err = r.layOut(ctx, tenant, def)
		return err
	})
	return dir, err
}

func (r *Registry) layOut(ctx context.Context, tenant int64, def *definition.Group) (string, error) {
	type entry struct{ path, sha string }
	var entries []entry
	for _, d := range def.Dependencies {
		fi, err := r.db.File(ctx, tenant, d.Path)
		if err != nil {
			return "", fmt.Errorf("%s: %w", d.Path, err)
		}
		entries = append(entries, entry{d.Path, fi.SHA256})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].path < entries[j].path })
	h := newHash()
	for _, e := range entries {
		h.add(e.path, e.sha)
	}
	// The folder's name says nothing of the tenant: a sandbox can read the
	// path its files are mounted from (in /proc/self/mountinfo).
	h.add("\x00tenant", fmt.Sprint(tenant)) // no file path holds a NUL
	dir := filepath.Join(r.roots, h.sum())
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".building-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	os.Chmod(tmp, 0o755)
	for _, e := range entries {
		dst := filepath.Join(tmp, filepath.FromSlash(e.path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		src, err := r.db.LocalBlob(ctx, e.sha)
		if err != nil {
			return "", fmt.Errorf("lay out %s: %w", e.path, err)
		}
		if err := copyBlob(src, dst); err != nil {
			return "", fmt.Errorf("lay out %s: %w", e.path, err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil && !os.IsExist(err) {
		if _, statErr := os.Stat(dir); statErr != nil {
			return "", err
		}
	}
	return dir, nil
}

// copyBlob makes dst a new file with src's bytes, readable by others: a
// clone of its extents where the file system can (FICLONE), else a copy
// (copy_file_range, through io.Copy).
func copyBlob(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if unix.IoctlFileClone(int(out.Fd()), int(in.Fd())) != nil {
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
	}
	return out.Close()
}

// PruneVenvs removes the virtual environments that no open group runs in
// and that no group has started with for keep, and returns how many.
func (r *Registry) PruneVenvs(keep time.Duration) (int, error) {
	removed, err := runner.PruneVenvs(r.run.Packages.CacheDir, keep, r.warm.Venvs())
	return len(removed), err
}

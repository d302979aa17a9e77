package registry

// Files: the shared storage of a tenant and the groups a file change concerns.

import (
	"context"
	"errors"
	"io"
	"io/fs"

	"toolhost/core/definition"
	"toolhost/storage"
)

// fileSet is the paths a tenant has uploaded.
func (r *Registry) fileSet(ctx context.Context, tenant int64) (map[string]bool, error) {
	files, err := r.db.Files(ctx, tenant)
	if err != nil {
		return nil, err
	}
	set := make(map[string]bool, len(files))
	for _, f := range files {
		set[f.Path] = true
	}
	return set, nil
}

// requirementErrors checks the uploaded requirements.txt files a group
// lists (see definition.Group.CheckRequirements): their errors, each naming
// its file, make the group Invalid. pip never reads a tenant's file; this
// is where a hostile one is refused on upload.
func (r *Registry) requirementErrors(ctx context.Context, tenant int64, g *definition.Group, files map[string]bool) ([]definition.Diagnostic, error) {
	return g.CheckRequirements(func(path string) ([]byte, error) {
		if !files[path] {
			return nil, fs.ErrNotExist
		}
		_, f, err := r.db.OpenFile(ctx, tenant, path)
		if errors.Is(err, storage.ErrNotFound) {
			return nil, fs.ErrNotExist // deleted meanwhile: Missing says so
		}
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return definition.ReadLimited(f)
	})
}

// PutFile stores a file and recomputes the groups that list it (a changed
// file reloads their plugin processes).
func (r *Registry) PutFile(ctx context.Context, tenant int64, path string, body io.Reader, max int64) (storage.FileInfo, error) {
	old, oldErr := r.db.File(ctx, tenant, path)
	if oldErr == nil {
		r.keepFiles(ctx, tenant, path)
	}
	fi, err := r.db.PutFile(ctx, tenant, path, body, max)
	if err != nil {
		return fi, err
	}
	if oldErr == nil && old.SHA256 == fi.SHA256 {
		return fi, nil // the same bytes again change nothing
	}
	return fi, r.recomputeListing(ctx, tenant, path, false)
}

// DeleteFile removes a file; the groups that list it become Incomplete.
func (r *Registry) DeleteFile(ctx context.Context, tenant int64, path string) error {
	if err := r.db.DeleteFile(ctx, tenant, path); err != nil {
		return err
	}
	return r.recomputeListing(ctx, tenant, path, true)
}

// recomputeListing recomputes every group of the tenant that lists path.
// A deleted file takes its groups out of service at once.
func (r *Registry) recomputeListing(ctx context.Context, tenant int64, path string, deleted bool) error {
	gs, err := r.db.Groups(ctx, tenant)
	if err != nil {
		return err
	}
	var files map[string]bool
	for _, g := range gs {
		v, err := viewOf(g)
		if err != nil {
			return err
		}
		if !contains(v.Dependencies, path) {
			continue
		}
		if deleted {
			r.unserve(tenant, g.Name)
		}
		if files == nil {
			if files, err = r.fileSet(ctx, tenant); err != nil {
				return err
			}
		}
		if err := r.recompute(ctx, tenant, g, files); err != nil {
			return err
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

package console

// Resources: the tenant's shared file storage. Files are listed, uploaded
// (one by one, or a whole folder, by drag and drop: the page's script
// PUTs each file), replaced and deleted; the groups' statuses, which files
// change, are shown beside them.

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"time"

	"toolhost/core/relpath"
	"toolhost/storage"
)

// resources lists the files and the groups' statuses.
func (c *Console) resources(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return &consoleError{http.StatusMethodNotAllowed, "GET"}
	}
	tenant := tenantOf(r).ID
	files, err := c.DB.Files(r.Context(), tenant)
	if err != nil {
		return err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	gs, err := c.Registry.Groups(r.Context(), tenant)
	if err != nil {
		return err
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].Name < gs[j].Name })
	c.render(w, r, "resources", "Resources", map[string]any{"Files": files, "Groups": gs, "Version": groupsVersion(gs), "MaxMB": c.maxFileSize() >> 20})
	return nil
}

func (c *Console) maxFileSize() int64 {
	if c.MaxFileSize > 0 {
		return c.MaxFileSize
	}
	return 50 << 20
}

// resource uploads (PUT), deletes (DELETE, or POST action=delete) or
// downloads (GET) one file.
func (c *Console) resource(w http.ResponseWriter, r *http.Request, escaped string) error {
	path, err := url.PathUnescape(escaped)
	if err == nil {
		err = relpath.Check(path)
	}
	if err != nil {
		return &consoleError{http.StatusBadRequest, "bad file path: " + err.Error()}
	}
	tenant := tenantOf(r).ID
	switch {
	case r.Method == http.MethodPut:
		if r.ContentLength > c.maxFileSize() {
			return &consoleError{http.StatusRequestEntityTooLarge, fmt.Sprintf("%s is over %d MiB", path, c.maxFileSize()>>20)}
		}
		fi, err := c.Registry.PutFile(r.Context(), tenant, path, r.Body, c.maxFileSize())
		if errors.Is(err, storage.ErrTooLarge) {
			return &consoleError{http.StatusRequestEntityTooLarge, fmt.Sprintf("%s is over %d MiB", path, c.maxFileSize()>>20)}
		}
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "%s: %d bytes\n", fi.Path, fi.Size)
		return nil
	case r.Method == http.MethodDelete || r.Method == http.MethodPost && r.PostFormValue("action") == "delete":
		if err := c.Registry.DeleteFile(r.Context(), tenant, path); err != nil {
			if errors.Is(err, storage.ErrNotFound) {
				return &consoleError{http.StatusNotFound, fmt.Sprintf("no file %q", path)}
			}
			return err
		}
		if r.Method == http.MethodPost {
			http.Redirect(w, r, "/resources", http.StatusSeeOther)
			return nil
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	case r.Method == http.MethodGet:
		fi, f, err := c.DB.OpenFile(r.Context(), tenant, path)
		if err != nil {
			return &consoleError{http.StatusNotFound, fmt.Sprintf("no file %q", path)}
		}
		defer f.Close()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", "attachment; filename*=UTF-8''"+url.PathEscape(lastSegment(fi.Path)))
		http.ServeContent(w, r, "", time.Time{}, f)
		return nil
	}
	return &consoleError{http.StatusMethodNotAllowed, "GET, PUT or DELETE"}
}

func lastSegment(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

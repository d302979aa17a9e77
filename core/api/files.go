package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"toolhost/storage"
)

// fileTooLarge is the 413 of an upload past MaxFileSize.
func (s *Server) fileTooLarge() *Problem {
	return newProblem(http.StatusRequestEntityTooLarge, "File too large", fmt.Sprintf("files are limited to %d bytes", s.MaxFileSize), nil)
}

// listFiles answers the tenant's files.
func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) error {
	files, err := s.DB.Files(r.Context(), tenantOf(r).ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, files)
	return nil
}

// putFile stores (or replaces) a file from the request body.
func (s *Server) putFile(w http.ResponseWriter, r *http.Request, path string) error {
	if r.ContentLength > s.MaxFileSize {
		return s.fileTooLarge()
	}
	fi, err := s.Registry.PutFile(r.Context(), tenantOf(r).ID, path, r.Body, s.MaxFileSize)
	if err != nil {
		if p := s.bodyError(r, err); p != nil {
			return p
		}
		if errors.Is(err, storage.ErrTooLarge) {
			return s.fileTooLarge()
		}
		return err
	}
	writeJSON(w, http.StatusOK, fi)
	return nil
}

// getFile answers a file's content, with its hash as ETag (conditional and
// range requests work).
func (s *Server) getFile(w http.ResponseWriter, r *http.Request, path string) error {
	fi, f, err := s.DB.OpenFile(r.Context(), tenantOf(r).ID, path)
	if err != nil {
		return noSuch(err, "no file %q", path)
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("ETag", `"`+fi.SHA256+`"`)
	http.ServeContent(w, r, "", time.Time{}, f)
	return nil
}

// deleteFile removes a file.
func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request, path string) error {
	if err := s.Registry.DeleteFile(r.Context(), tenantOf(r).ID, path); err != nil {
		return noSuch(err, "no file %q", path)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

package api

import (
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"
)

// listKnowledge answers the tenant's knowledge documents.
func (s *Server) listKnowledge(w http.ResponseWriter, r *http.Request) error {
	docs, err := s.DB.Knowledge(r.Context(), tenantOf(r).ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, docs)
	return nil
}

// putKnowledge stores or replaces a knowledge document (UTF-8 text) and
// indexes its passages.
func (s *Server) putKnowledge(w http.ResponseWriter, r *http.Request, name string) error {
	body, err := s.readBody(r, s.MaxFileSize, newProblem(http.StatusRequestEntityTooLarge, "Document too large",
		fmt.Sprintf("documents are limited to %d bytes", s.MaxFileSize), nil))
	if err != nil {
		return err
	}
	if !utf8.Valid(body) {
		return newProblem(http.StatusBadRequest, "Bad document", "a knowledge document is UTF-8 text; this body is not valid UTF-8", nil)
	}
	if err := s.DB.PutKnowledge(r.Context(), tenantOf(r).ID, name, string(body)); err != nil {
		return noSuch(err, "no knowledge document %q", name)
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": name, "size": len(body)})
	return nil
}

// getKnowledge answers a knowledge document's text.
func (s *Server) getKnowledge(w http.ResponseWriter, r *http.Request, name string) error {
	text, err := s.DB.KnowledgeText(r.Context(), tenantOf(r).ID, name)
	if err != nil {
		return noSuch(err, "no knowledge document %q", name)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, text)
	return nil
}

// deleteKnowledge removes a knowledge document and its passages.
func (s *Server) deleteKnowledge(w http.ResponseWriter, r *http.Request, name string) error {
	if err := s.DB.DeleteKnowledge(r.Context(), tenantOf(r).ID, name); err != nil {
		return noSuch(err, "no knowledge document %q", name)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listUnanswered answers the questions the agents could not answer from
// the knowledge (ReportUnansweredQuestion), newest ?limit=, oldest first.
func (s *Server) listUnanswered(w http.ResponseWriter, r *http.Request) error {
	return serveList(w, r, s.DB.UnansweredQuestions)
}

// deleteUnanswered removes a reviewed question.
func (s *Server) deleteUnanswered(w http.ResponseWriter, r *http.Request, id int64) error {
	if err := s.DB.DeleteUnanswered(r.Context(), tenantOf(r).ID, id); err != nil {
		return noSuch(err, "no unanswered question %d", id)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

package console

// Sessions: the tenant's sessions, a session's System and Trace Logs as a
// timeline, unanswered questions, knowledge documents.

import "net/http"

func (c *Console) sessions(w http.ResponseWriter, r *http.Request) error {
	return &consoleError{http.StatusNotImplemented, "the Sessions screen is not built yet"}
}

func (c *Console) session(w http.ResponseWriter, r *http.Request, id string) error {
	return &consoleError{http.StatusNotImplemented, "the Sessions screen is not built yet"}
}

func (c *Console) knowledge(w http.ResponseWriter, r *http.Request) error {
	return &consoleError{http.StatusNotImplemented, "knowledge documents are not built yet"}
}

func (c *Console) knowledgeDoc(w http.ResponseWriter, r *http.Request, escaped string) error {
	return &consoleError{http.StatusNotImplemented, "knowledge documents are not built yet"}
}

func (c *Console) unanswered(w http.ResponseWriter, r *http.Request, id string) error {
	return &consoleError{http.StatusNotImplemented, "unanswered questions are not built yet"}
}

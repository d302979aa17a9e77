package console

import "net/http"

// playground serves the Playground (see playground.go's full version).
func (c *Console) playground(w http.ResponseWriter, r *http.Request, rest string) error {
	return &consoleError{http.StatusNotImplemented, "the Playground is not built yet"}
}

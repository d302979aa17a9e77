package console

// The Tools list's live update: a stream of server-sent events that says,
// at each change of the tenant's groups, a version of the list; the page
// reads the list again when the version is not the one it shows.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"time"

	"toolhost/core/definition"
)

// liveFor bounds one stream: the browser then opens another (EventSource
// does by itself), and its sign-in is checked again.
const liveFor = 5 * time.Minute

// liveKeepAlive is how often a quiet stream sends a comment, so that
// proxies do not close it.
const liveKeepAlive = 25 * time.Second

// groupsVersion names the state of a tenant's list of groups as the Tools
// page shows it: it changes whenever a group is stored, deleted, or
// changes status, errors or generation.
func groupsVersion(gs []*definition.Report) string {
	b, _ := json.Marshal(gs)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// sortedGroups returns the tenant's groups by name.
func (c *Console) sortedGroups(r *http.Request) ([]*definition.Report, error) {
	gs, err := c.Registry.Groups(r.Context(), tenantOf(r).ID)
	if err != nil {
		return nil, err
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].Name < gs[j].Name })
	return gs, nil
}

// watchGroups answers GET /tools?format=events: a "groups" event with the
// list's version (groupsVersion) at once and after each change of the
// tenant's groups, until the browser leaves, the console closes (Close)
// or liveFor has passed.
func (c *Console) watchGroups(w http.ResponseWriter, r *http.Request) error {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not hold the events back
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	end := time.NewTimer(liveFor)
	defer end.Stop()
	ping := time.NewTicker(liveKeepAlive)
	defer ping.Stop()
	last := ""
	for {
		// Watched before the list is read: a change in between is not
		// missed.
		changed, stop := c.Registry.Changed(tenantOf(r).ID)
		gs, err := c.sortedGroups(r)
		if err != nil {
			stop()
			return nil // the stream has begun: the browser tries again
		}
		if v := groupsVersion(gs); v != last {
			last = v
			fmt.Fprintf(w, "event: groups\ndata: %s\n\n", v)
		}
		if rc.Flush() != nil {
			stop()
			return nil
		}
		select {
		case <-changed:
			stop()
		case <-ping.C:
			stop()
			fmt.Fprint(w, ": still here\n\n")
		case <-r.Context().Done():
			stop()
			return nil
		case <-c.closing():
			stop()
			return nil
		case <-end.C:
			stop()
			return nil
		}
	}
}

// closing is closed by Close.
func (c *Console) closing() <-chan struct{} {
	c.closeOnce.Do(func() { c.closed = make(chan struct{}) })
	return c.closed
}

// Close ends the console's event streams (the Tools list's live update),
// so that a server's graceful shutdown does not wait for them. Pages keep
// being served.
func (c *Console) Close() {
	c.closing()
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closed:
	default:
		close(c.closed)
	}
}

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

// LiveStreams bounds a tenant's open live streams (its signed-in tabs on
// the Tools and Resources screens, on this node): each holds a connection
// and reads the tenant's groups at every change, so a tenant opening
// thousands would make every change of its groups cost the node that many
// reads. Past it a stream is refused with 429 and the page shows its list
// as loaded, without live updates.
const LiveStreams = 16

// liveSettle is the least time between two reads of one stream's list: a
// burst of changes (a tenant storing many groups) is read once at its end
// rather than once per change.
const liveSettle = 250 * time.Millisecond

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
	tenant := tenantOf(r).ID
	if !c.joinLive(tenant) {
		w.Header().Set("Retry-After", "60")
		return &consoleError{http.StatusTooManyRequests, fmt.Sprintf("too many live lists open: at most %d for a tenant", LiveStreams)}
	}
	defer c.leaveLive(tenant)
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
		changed, stop := c.Registry.Changed(tenant)
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
			// Let a burst of changes end before the list is read again.
			settle := time.NewTimer(liveSettle)
			select {
			case <-settle.C:
			case <-r.Context().Done():
			case <-c.closing():
			}
			settle.Stop()
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

// joinLive counts one more live stream of tenant, false when it has
// LiveStreams open already.
func (c *Console) joinLive(tenant int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live[tenant] >= LiveStreams {
		return false
	}
	if c.live == nil {
		c.live = map[int64]int{}
	}
	c.live[tenant]++
	return true
}

// leaveLive counts one live stream of tenant less.
func (c *Console) leaveLive(tenant int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live[tenant]--; c.live[tenant] <= 0 {
		delete(c.live, tenant)
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

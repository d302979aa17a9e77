package console

import (
	"net/http"
	"strconv"

	"toolhost/storage"
)

// usageRow is one line of the usage page: what the tenant holds or takes
// of a quota, against the quota.
type usageRow struct {
	What, Used, Allowed string
}

// usage shows the tenant's usage against its quota in force (the same as
// GET /v1/usage).
func (c *Console) usage(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return &consoleError{http.StatusMethodNotAllowed, "GET"}
	}
	t := tenantOf(r)
	u, err := c.DB.Usage(r.Context(), t.ID)
	if err != nil {
		return err
	}
	q, err := c.DB.EffectiveQuota(r.Context(), t.ID)
	if err != nil {
		return err
	}
	rows := []usageRow{
		{"Stored bytes (files and knowledge)", itoa(u.StorageBytes), limit(q.StorageBytes, "")},
		{"Groups", itoa(u.Groups), limit(q.Groups, "")},
		{"Agents", itoa(u.Agents), limit(q.Agents, "")},
		{"Session log bytes", itoa(u.LogBytes), limit(q.LogBytes, "")},
		{"Warm groups on this node", itoa(int64(c.Registry.WarmOf(t.ID))), limit(q.WarmGroups, "a fair share")},
		{"Concurrent calls on this node", "", limit(q.ConcurrentCalls, "")},
		{"Calls per second on this node", "", rate(q.CallsPerSecond)},
	}
	c.render(w, r, "usage", "Usage", map[string]any{"Rows": rows, "Files": u.Files})
	return nil
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// limit is a quota's field as the page shows it.
func limit(v int64, zero string) string {
	switch {
	case v < 0:
		return "no limit"
	case v == 0 && zero != "":
		return zero
	case v == 0:
		return "no limit"
	}
	return itoa(v)
}

func rate(v float64) string {
	if v <= 0 {
		return "no limit"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// quotaMessage is what a page says of a change refused by a quota.
func quotaMessage(qe *storage.QuotaError) *consoleError {
	code := http.StatusForbidden
	if qe.Resource == "storage_bytes" {
		code = http.StatusInsufficientStorage
	}
	return &consoleError{code, qe.Error() + "; nothing was stored"}
}

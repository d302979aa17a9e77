package cli

// Quotas: the server's defaults (serve's --quota-* flags) and each
// tenant's overrides (toolhost tenant quota).

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"toolhost/storage"
)

// quotaField is one quota a flag sets: its flag name (without the --quota-
// of serve), what it bounds, and how a value maps to the stored field.
type quotaField struct {
	name, usage string
	// unit multiplies an integer value (MiB to bytes); 0 for a float.
	unit int64
	get  func(q *storage.Quota) string
	set  func(q *storage.Quota, v int64, f float64)
}

const mib = 1 << 20

var quotaFields = []quotaField{
	{"storage-mb", "`MiB` of files and knowledge documents a tenant may store", mib,
		func(q *storage.Quota) string { return bytesValue(q.StorageBytes) },
		func(q *storage.Quota, v int64, _ float64) { q.StorageBytes = v }},
	{"groups", "tool groups a tenant may store", 1,
		func(q *storage.Quota) string { return intValue(q.Groups) },
		func(q *storage.Quota, v int64, _ float64) { q.Groups = v }},
	{"agents", "agents a tenant may store", 1,
		func(q *storage.Quota) string { return intValue(q.Agents) },
		func(q *storage.Quota, v int64, _ float64) { q.Agents = v }},
	{"log-mb", "`MiB` of session logs kept per tenant (the oldest entries go first, hourly)", mib,
		func(q *storage.Quota) string { return bytesValue(q.LogBytes) },
		func(q *storage.Quota, v int64, _ float64) { q.LogBytes = v }},
	{"concurrent-calls", "calls of a tenant running at once on a node (a call past it waits briefly, then answers 429)", 1,
		func(q *storage.Quota) string { return intValue(q.ConcurrentCalls) },
		func(q *storage.Quota, v int64, _ float64) { q.ConcurrentCalls = v }},
	{"calls-per-second", "calls a tenant may start per second on a node, on average (past it: 429 with Retry-After)", 0,
		func(q *storage.Quota) string {
			switch {
			case q.CallsPerSecond == 0:
				return "default"
			case q.CallsPerSecond < 0:
				return "unlimited"
			}
			return strconv.FormatFloat(q.CallsPerSecond, 'g', -1, 64)
		},
		func(q *storage.Quota, _ int64, f float64) { q.CallsPerSecond = f }},
	{"burst", "calls a tenant may start at once above its rate (the token bucket's size; default twice the rate)", 1,
		func(q *storage.Quota) string { return intValue(q.Burst) },
		func(q *storage.Quota, v int64, _ float64) { q.Burst = v }},
	{"warm-groups", "warm groups guaranteed to a tenant on a node: others cannot evict it below this (default: a fair share of --max-warm)", 1,
		func(q *storage.Quota) string { return intValue(q.WarmGroups) },
		func(q *storage.Quota, v int64, _ float64) { q.WarmGroups = v }},
}

func intValue(v int64) string {
	switch {
	case v == 0:
		return "default"
	case v < 0:
		return "unlimited"
	}
	return strconv.FormatInt(v, 10)
}

func bytesValue(v int64) string {
	if v <= 0 {
		return intValue(v)
	}
	if v%mib == 0 {
		return fmt.Sprintf("%d MiB", v/mib)
	}
	return fmt.Sprintf("%d bytes", v)
}

// quotaValue is a flag's text: a number, "unlimited", or "default".
type quotaValue struct {
	text string
	set  bool
}

func (v *quotaValue) String() string     { return v.text }
func (v *quotaValue) Set(s string) error { v.text, v.set = s, true; return nil }

// parseQuotaValue reads one flag's value into q.
func parseQuotaValue(f quotaField, text string, q *storage.Quota) error {
	switch strings.ToLower(strings.TrimSpace(text)) {
	case "default":
		f.set(q, 0, 0)
		return nil
	case "unlimited", "none":
		f.set(q, storage.Unlimited, storage.Unlimited)
		return nil
	}
	if f.unit == 0 {
		x, err := strconv.ParseFloat(text, 64)
		if err != nil || x <= 0 {
			return fmt.Errorf("--%s: want a positive number, unlimited or default, got %q", f.name, text)
		}
		f.set(q, 0, x)
		return nil
	}
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/f.unit {
		return fmt.Errorf("--%s: want a positive whole number, unlimited or default, got %q", f.name, text)
	}
	f.set(q, n*f.unit, 0)
	return nil
}

// addQuotaFlags adds one flag per quota, named prefix+name.
func addQuotaFlags(fs *flag.FlagSet, prefix string, defaults map[string]string) map[string]*quotaValue {
	vals := map[string]*quotaValue{}
	for _, f := range quotaFields {
		v := &quotaValue{text: defaults[f.name]}
		vals[f.name] = v
		usage := f.usage
		if prefix != "" {
			usage += "; 0 or unlimited: no limit"
		} else {
			usage += "; unlimited, or default (the server's)"
		}
		fs.Var(v, prefix+f.name, usage)
	}
	return vals
}

// serveQuotaDefaults are serve's defaults of the quota flags.
var serveQuotaDefaults = map[string]string{
	"storage-mb": "2048", "groups": "500", "agents": "500", "log-mb": "1024",
	"concurrent-calls": "64", "calls-per-second": "0", "burst": "0", "warm-groups": "0",
}

// quotaDefaults turns serve's --quota-* flags into the default quota (0
// there: no limit, except warm-groups and burst, whose 0 is their own
// default: a fair share, twice the rate).
func quotaDefaults(vals map[string]*quotaValue) (storage.Quota, error) {
	var q storage.Quota
	for _, f := range quotaFields {
		text := vals[f.name].text
		if text == "0" {
			if f.name != "warm-groups" && f.name != "burst" {
				f.set(&q, storage.Unlimited, storage.Unlimited)
			}
			continue
		}
		if err := parseQuotaValue(f, text, &q); err != nil {
			return q, fmt.Errorf("--quota-%s", strings.TrimPrefix(err.Error(), "--"))
		}
	}
	return q, nil
}

// TenantQuotaJSON is what toolhost tenant quota --json prints: the
// tenant's quota overrides after the change, if any (an empty object: the
// server's defaults; -1 is unlimited), and whether they changed.
type TenantQuotaJSON struct {
	Tenant  string        `json:"tenant"`
	Quota   storage.Quota `json:"quota"`
	Changed bool          `json:"changed"`
}

// tenantQuota sets (with flags) or shows a tenant's quota overrides.
func tenantQuota(ctx context.Context, env *Env, db storage.Store, args []string, vals map[string]*quotaValue, asJSON bool) error {
	t, err := db.TenantByName(ctx, args[0])
	if err != nil {
		return fmt.Errorf("tenant %q: %w", args[0], err)
	}
	q, err := db.TenantQuota(ctx, t.ID)
	if err != nil {
		return err
	}
	changed := false
	for _, f := range quotaFields {
		if v := vals[f.name]; v.set {
			if err := parseQuotaValue(f, v.text, &q); err != nil {
				return errors.Join(errUsage, err)
			}
			changed = true
		}
	}
	if changed {
		if err := db.SetTenantQuota(ctx, t.ID, q); err != nil {
			return err
		}
	}
	if asJSON {
		b, _ := json.MarshalIndent(TenantQuotaJSON{Tenant: t.Name, Quota: q, Changed: changed}, "", "  ")
		fmt.Fprintf(env.Stdout, "%s\n", b)
		return nil
	}
	if changed {
		fmt.Fprintf(env.Stdout, "tenant %q: quota changed (running servers apply it within seconds)\n", t.Name)
	}
	fmt.Fprint(env.Stdout, quotaText(q))
	return nil
}

// errUsage marks an error of the command line.
var errUsage = errors.New("usage")

// quotaText is a tenant's overrides, one per line ("default": the
// server's).
func quotaText(q storage.Quota) string {
	var b strings.Builder
	for _, f := range quotaFields {
		fmt.Fprintf(&b, "  %-17s %s\n", f.name, f.get(&q))
	}
	return b.String()
}

// quotaSummary is a tenant's overrides on one line ("" when it has none).
func quotaSummary(q storage.Quota) string {
	var parts []string
	for _, f := range quotaFields {
		if v := f.get(&q); v != "default" {
			parts = append(parts, f.name+"="+strings.ReplaceAll(v, " ", ""))
		}
	}
	return strings.Join(parts, " ")
}

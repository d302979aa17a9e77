package api

import (
	"fmt"
	"net/http"

	"toolhost/storage"
)

// usageAnswer is GET /v1/usage: what the tenant holds and may hold.
type usageAnswer struct {
	Tenant string        `json:"tenant"`
	Usage  storage.Usage `json:"usage"`
	// Quota is the tenant's quota in force: its overrides over the
	// server's defaults.
	Quota quotaView `json:"quota"`
	// WarmGroups is how many of its groups this node keeps warm.
	WarmGroups int `json:"warm_groups"`
}

// usage answers the tenant's own usage against its quota.
func (s *Server) usage(w http.ResponseWriter, r *http.Request) error {
	t := tenantOf(r)
	u, err := s.DB.Usage(r.Context(), t.ID)
	if err != nil {
		return err
	}
	q, err := s.DB.EffectiveQuota(r.Context(), t.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, usageAnswer{Tenant: t.Name, Usage: u, Quota: quotaView(q), WarmGroups: s.Registry.WarmOf(t.ID)})
	return nil
}

// quotaView is a quota as the API shows it, every field written: -1 is no
// limit; for warm_groups and burst 0 is their own default (a fair share of
// the node's warm groups; twice the rate).
type quotaView struct {
	StorageBytes    int64   `json:"storage_bytes"`
	Groups          int64   `json:"groups"`
	Agents          int64   `json:"agents"`
	LogBytes        int64   `json:"log_bytes"`
	ConcurrentCalls int64   `json:"concurrent_calls"`
	CallsPerSecond  float64 `json:"calls_per_second"`
	Burst           int64   `json:"burst"`
	WarmGroups      int64   `json:"warm_groups"`
}

// writeTenantMetrics adds to /metrics what each tenant holds: its stored
// bytes and its warm groups on this node (labelled by tenant name: a
// platform has tens or hundreds of tenants, not millions).
func (s *Server) writeTenantMetrics(w http.ResponseWriter, r *http.Request) {
	tenants, err := s.DB.Tenants(r.Context())
	if err != nil {
		s.Log.Warn("metrics: cannot list tenants", "error", err)
		return
	}
	fmt.Fprintln(w, "# HELP toolhost_tenant_stored_bytes Bytes a tenant stores (files and knowledge documents), against its storage quota.")
	fmt.Fprintln(w, "# TYPE toolhost_tenant_stored_bytes gauge")
	for _, t := range tenants {
		if u, err := s.DB.Usage(r.Context(), t.ID); err == nil {
			fmt.Fprintf(w, "toolhost_tenant_stored_bytes{tenant=%q} %d\n", t.Name, u.StorageBytes)
		}
	}
	fmt.Fprintln(w, "# HELP toolhost_tenant_warm_groups Groups of a tenant this node keeps warm.")
	fmt.Fprintln(w, "# TYPE toolhost_tenant_warm_groups gauge")
	for _, t := range tenants {
		fmt.Fprintf(w, "toolhost_tenant_warm_groups{tenant=%q} %d\n", t.Name, s.Registry.WarmOf(t.ID))
	}
}

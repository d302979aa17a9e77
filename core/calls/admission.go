package calls

import (
	"context"
	"time"

	"toolhost/core/admission"
	"toolhost/core/pipeline"
	"toolhost/storage"
)

// Admission of calls: every call of a tenant's pipeline that runs tool
// code is admitted by the node's admission.Controller before it runs,
// whichever its door (/v1/calls, a session, a continuation, MCP, the
// console), against the tenant's quota (calls per second with a burst,
// concurrent calls) and the node's --max-calls, whose waiting calls take
// turns by tenant.
//
// A call made by tool code (toolhost.call_tool) runs inside its caller,
// which was admitted and holds its slots until the nested call returns: it
// takes a token of the tenant's bucket (a tool looping over call_tool is
// still held to the rate) but no slot, for a slot of its own would
// deadlock a tenant at its concurrency bound (or a node at --max-calls)
// whose running calls all wait on their nested calls. Call depth is bounded
// (pipeline.MaxCallDepth), so this lends no unbounded concurrency. Skills
// (a session's start and finish) are not admitted: they are part of the
// session's lifecycle, not calls a client makes, and a finish refused
// halfway would leave a session half-closed.

// tenantAdmission admits one tenant's calls.
type tenantAdmission struct {
	c      *admission.Controller
	tenant int64
}

// Admit implements pipeline.Admission.
func (a tenantAdmission) Admit(ctx context.Context, door pipeline.Door) (func(), error) {
	if door == pipeline.DoorCallTool {
		return func() {}, a.c.Take(ctx, a.tenant)
	}
	return a.c.Admit(ctx, a.tenant)
}

// limits reads a tenant's rate and concurrency quotas: its overrides over
// the server's defaults (storage.Unlimited, or a default of 0, is none).
func (s *Service) limits(ctx context.Context, tenant int64) (admission.Limits, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	q, err := s.db.EffectiveQuota(ctx, tenant)
	if err != nil {
		return admission.Limits{}, err
	}
	return limitsOf(q), nil
}

// limitsOf is the part of a quota admission enforces.
func limitsOf(q storage.Quota) admission.Limits {
	return admission.Limits{Rate: q.CallsPerSecond, Burst: q.Burst, Concurrent: q.ConcurrentCalls}
}

// AdmitCheck admits a deep check of a tenant's group (a dry run, from the
// API or the console) like a call: it imports the group's code in a
// sandbox of its own, as a call does, so it is held to the same rate,
// concurrency and node slots (issue 25: dry runs ran outside every
// quota). release ends it.
func (s *Service) AdmitCheck(ctx context.Context, tenant int64) (release func(), err error) {
	return s.admit.Admit(ctx, tenant)
}

// Admission is the node's admission of calls (its figures, for tests and
// the metrics).
func (s *Service) Admission() *admission.Controller { return s.admit }

// TenantObserver, when the Service's Observer is one too, counts each
// tenant's calls and refusals as well (labelled by tenant name: a
// platform's tenants are tens or hundreds, not millions, so the series
// stay few).
type TenantObserver interface {
	ObserveTenantCall(tenant string, success bool)
	ObserveTenantRefused(tenant, reason string)
}

// observerOf is the Observer of a tenant's pipeline.
func (s *Service) observerOf(tenant int64) pipeline.Observer {
	to, ok := s.observer.(TenantObserver)
	if !ok {
		return s.observer
	}
	return tenantObserver{Observer: s.observer, to: to, s: s, tenant: tenant}
}

// tenantObserver counts a tenant's calls besides the node's.
type tenantObserver struct {
	pipeline.Observer
	to     TenantObserver
	s      *Service
	tenant int64
}

// ObserveCall implements pipeline.Observer.
func (o tenantObserver) ObserveCall(door pipeline.Door, success bool, errKind string, d time.Duration) {
	o.Observer.ObserveCall(door, success, errKind, d)
	o.to.ObserveTenantCall(o.s.tenantName(o.tenant), success)
}

// ObserveRefused implements pipeline.Observer.
func (o tenantObserver) ObserveRefused(door pipeline.Door, reason string) {
	o.Observer.ObserveRefused(door, reason)
	o.to.ObserveTenantRefused(o.s.tenantName(o.tenant), reason)
}

// tenantName is a tenant's name, read once (tenants are not renamed).
func (s *Service) tenantName(id int64) string {
	if n, ok := s.names.Load(id); ok {
		return n.(string)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tenants, err := s.db.Tenants(ctx)
	if err != nil {
		return "?"
	}
	name := "?"
	for _, t := range tenants {
		s.names.Store(t.ID, t.Name)
		if t.ID == id {
			name = t.Name
		}
	}
	return name
}

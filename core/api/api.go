// Package api is toolhost's HTTP API for the portal (files, groups,
// statuses) and the agents (tool schemas, calls): JSON bodies, bearer
// tokens, errors as RFC 9457 problem details.
//
// Handlers return errors; one place (problemFor, in problems.go) turns
// every error into the problem that answers it. The files are cut by
// concept: routes.go (routing, methods, authentication), problems.go,
// files.go, groups.go, tools.go, agents.go, sessions.go, knowledge.go,
// body.go (request bodies), metrics.go and mcp.go.
package api

import (
	_ "embed"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"toolhost/core/calls"
	"toolhost/core/console"
	"toolhost/core/geoip"
	"toolhost/core/mcpserver"
	"toolhost/core/registry"
	"toolhost/storage"
)

//go:embed openapi.json
var openAPI []byte

// DefaultMaxFileSize is the largest upload accepted unless configured.
const DefaultMaxFileSize = 50 << 20

// Server serves the API.
type Server struct {
	DB       storage.Store
	Registry *registry.Registry
	// Calls is the call path (made over Registry when nil).
	Calls *calls.Service
	// MCP serves /mcp and /mcp/agents/{agent} (made over Calls when nil).
	MCP *mcpserver.Handler
	// Console, when set, serves the web console at / (its pages, its
	// static files).
	Console *console.Console
	// MaxFileSize bounds an uploaded file (413 past it).
	MaxFileSize int64
	Log         *slog.Logger
	// RequestLog, when set, takes the line logged for each request in
	// place of Log, as Log's JSON handler writes it, one line per Write
	// (the server holds these lines and writes them in batches).
	RequestLog io.Writer
	Metrics    *Metrics
	// TokenCache is how long a verified token is trusted without asking the
	// database again: 0 means TokenTTL, a negative value means every request
	// asks. A revoked token keeps working for at most this long.
	TokenCache time.Duration
	// BodyGrace and BodyMinRate bound how slowly a request body may come:
	// by BodyGrace + n/BodyMinRate (bytes per second) after the request
	// started, n bytes must have come, or the server stops reading,
	// answers 408 and closes the connection. 0 means DefaultBodyGrace and
	// DefaultBodyMinRate.
	BodyGrace   time.Duration
	BodyMinRate int64
	// MaxUploads bounds the request bodies one tenant has in transfer at
	// once (429 past it); a body stops counting once it has come. 0 means
	// DefaultMaxUploads.
	MaxUploads int
	// GeoIP, when set, fills the core's __GEOIP__ substitution of the
	// sessions started here (see core/geoip).
	GeoIP *geoip.Resolver

	tokens    sync.Map // token → cachedTenant
	uploadsMu sync.Mutex
	uploads   map[int64]int // tenant → request bodies in transfer
	draining  atomic.Bool   // shutting down: /readyz answers 503
	inflight  atomic.Int64  // requests under /v1/ being served
}

// Version is toolhost's module version as the binary was built (its
// pseudo-version names the commit), or "devel" when the build has none.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return strings.TrimPrefix(v, "v")
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return "devel+" + s.Value[:12]
		}
	}
	return "devel"
}

// InFlight is how many requests under /v1/ (calls, uploads, ...) are being
// served.
func (s *Server) InFlight() int64 { return s.inflight.Load() }

// Drain marks the server as shutting down: /readyz answers 503 from now
// on, so that a load balancer stops sending it work (/healthz, the
// liveness check, still answers 200), and new requests under /v1/ answer
// 503 with Retry-After; the ones being served carry on.
func (s *Server) Drain() { s.draining.Store(true) }

// Handler routes requests. File paths are taken from the raw request path,
// so that a hostile path ("..", "%00", "\") is refused by the storage rule
// rather than silently cleaned by a router.
func (s *Server) Handler() http.Handler {
	if s.MaxFileSize <= 0 {
		s.MaxFileSize = DefaultMaxFileSize
	}
	if s.Metrics == nil {
		s.Metrics = NewMetrics()
	}
	if s.Calls == nil {
		s.Calls = calls.New(calls.Config{DB: s.DB, Registry: s.Registry, Observer: s.Metrics})
	}
	if s.Console != nil && s.Console.TokenCache == 0 {
		// The console trusts a token as long as the API does.
		s.Console.TokenCache = s.TokenCache
	}
	if s.MCP == nil {
		s.MCP = &mcpserver.Handler{Calls: s.Calls, Registry: s.Registry, Version: Version(), Logger: s.Log}
	}
	if s.BodyGrace <= 0 {
		s.BodyGrace = DefaultBodyGrace
	}
	if s.BodyMinRate <= 0 {
		s.BodyMinRate = DefaultBodyMinRate
	}
	if s.MaxUploads <= 0 {
		s.MaxUploads = DefaultMaxUploads
	}
	return s.logged(s.timeBodies(http.HandlerFunc(s.route)))
}

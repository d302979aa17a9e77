package console

// The console's server side: sign-in, routing, pages.

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"toolhost/core/admission"
	"toolhost/core/calls"
	"toolhost/core/registry"
	"toolhost/storage"
)

//go:embed templates
var templateFiles embed.FS

// CookieName is the console's session cookie: an opaque id (never the
// token), without an expiry, so that the browser forgets it when its
// session ends.
const CookieName = "toolhost_console"

// IdleTimeout is how long a console sign-in lasts without a request.
const IdleTimeout = 12 * time.Hour

// recheck is how long a sign-in trusts its token by default.
const recheck = time.Minute

// csp is the console's content security policy: nothing inline, scripts
// and styles alike (a style attribute a tool's output slipped in could
// lay a page over the console; scripts set styles through the CSSOM,
// which the policy does not govern).
const csp = "default-src 'self'; script-src 'self'; img-src 'self' data: blob: https:; style-src 'self'; " +
	"connect-src 'self' blob:; form-action 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'"

// bodyLimit is the most of a request's body the console reads: a file
// for an upload, a definition or a call's arguments for the forms and the
// Playground, little for the rest.
func (c *Console) bodyLimit(r *http.Request) int64 {
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPut && strings.HasPrefix(p, "/resources/"), r.Method == http.MethodPost && p == "/knowledge":
		return c.maxFileSize() + 64<<10
	case p == "/tools" || strings.HasPrefix(p, "/playground/"):
		return 8 << 20
	}
	return 64 << 10
}

// Console serves the web console: server-rendered pages (html/template)
// with small scripts, over the same registry and call path as the API.
type Console struct {
	DB       storage.Store
	Registry *registry.Registry
	Calls    *calls.Service
	// MaxFileSize bounds an uploaded file.
	MaxFileSize int64
	// TokenCache is how long a sign-in trusts its token before asking the
	// database again, as the API's TokenCache: 0 means a minute, a negative
	// value every request. A revoked token ends its sign-ins within it.
	TokenCache time.Duration
	Log        *slog.Logger

	once    sync.Once
	pages   map[string]*template.Template
	static  http.Handler
	mu      sync.Mutex
	signIns map[string]*signIn // cookie id → tenant
	live    map[int64]int      // open live streams by tenant (joinLive)

	closeOnce sync.Once
	closed    chan struct{} // closed by Close: the event streams end
}

// signIn is one browser's sign-in. The token stays in the server's
// memory, to be checked again.
type signIn struct {
	tenant  storage.Tenant
	token   string
	seen    time.Time
	checked time.Time
}

type tenantKey struct{}

func (c *Console) init() {
	c.once.Do(func() {
		if c.Log == nil {
			c.Log = slog.New(slog.DiscardHandler)
		}
		c.signIns = map[string]*signIn{}
		c.pages = map[string]*template.Template{}
		layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/partials.html"))
		pages, _ := fs.Glob(templateFiles, "templates/*.html")
		for _, p := range pages {
			name := strings.TrimSuffix(strings.TrimPrefix(p, "templates/"), ".html")
			if name == "layout" || name == "partials" {
				continue
			}
			c.pages[name] = template.Must(template.Must(layout.Clone()).ParseFS(templateFiles, p))
		}
		sub, _ := fs.Sub(Static, "static")
		c.static = http.StripPrefix("/static/", http.FileServer(http.FS(sub)))
	})
}

// Handles reports whether a path is the console's (everything but the
// API, MCP and the probes).
func Handles(path string) bool {
	if path == "/" || path == "/login" || path == "/logout" || path == "/docs" || strings.HasPrefix(path, "/static/") {
		return true
	}
	for _, screen := range []string{"/tools", "/resources", "/playground", "/sessions", "/knowledge", "/unanswered", "/usage"} {
		if path == screen || strings.HasPrefix(path, screen+"/") {
			return true
		}
	}
	return false
}

// ServeHTTP routes the console's requests.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.init()
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	// Every answer, the sign-in page's too, has a strict content security
	// policy (scripts and styles only from the console itself, forms only
	// to it) and may not be framed.
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Frame-Options", "DENY")
	path := r.URL.Path
	// A body is read only as far as what it may be needs.
	if r.Body != nil && r.Method != http.MethodGet && r.Method != http.MethodHead {
		r.Body = http.MaxBytesReader(w, r.Body, c.bodyLimit(r))
	}
	switch {
	case strings.HasPrefix(path, "/static/"):
		w.Header().Set("Cache-Control", "public, max-age=3600")
		c.static.ServeHTTP(w, r)
		return
	case path == "/login":
		c.login(w, r)
		return
	case path == "/logout":
		c.logout(w, r)
		return
	case path == "/docs":
		c.docs(w, r)
		return
	}
	tenant, ok := c.signedIn(r)
	if !ok {
		if r.Method == http.MethodGet {
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		http.Error(w, "sign in first", http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r) {
		http.Error(w, "a change must come from the console's own pages", http.StatusForbidden)
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), tenantKey{}, tenant))
	var err error
	switch {
	case path == "/":
		http.Redirect(w, r, "/tools", http.StatusSeeOther)
		return
	case path == "/tools":
		err = c.tools(w, r)
	case strings.HasPrefix(path, "/tools/"):
		err = c.group(w, r, strings.TrimPrefix(r.URL.EscapedPath(), "/tools/"))
	case path == "/resources":
		err = c.resources(w, r)
	case strings.HasPrefix(path, "/resources/"):
		err = c.resource(w, r, strings.TrimPrefix(r.URL.EscapedPath(), "/resources/"))
	case path == "/playground" || strings.HasPrefix(path, "/playground/"):
		err = c.playground(w, r, strings.TrimPrefix(strings.TrimPrefix(path, "/playground"), "/"))
	case path == "/sessions":
		err = c.sessions(w, r)
	case strings.HasPrefix(path, "/sessions/"):
		err = c.session(w, r, strings.TrimPrefix(path, "/sessions/"))
	case path == "/knowledge":
		err = c.knowledge(w, r)
	case path == "/usage":
		err = c.usage(w, r)
	case strings.HasPrefix(path, "/knowledge/"):
		err = c.knowledgeDoc(w, r, strings.TrimPrefix(r.URL.EscapedPath(), "/knowledge/"))
	case strings.HasPrefix(path, "/unanswered/"):
		err = c.unanswered(w, r, strings.TrimPrefix(path, "/unanswered/"))
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		c.fail(w, r, err)
	}
}

// tenantOf is the signed-in tenant of a request.
func tenantOf(r *http.Request) storage.Tenant { return r.Context().Value(tenantKey{}).(storage.Tenant) }

// sameOrigin reports whether a request that changes something comes from
// the console's own pages (the cookie is SameSite=Strict as well).
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin"
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

// signedIn finds the tenant of a request's cookie.
func (c *Console) signedIn(r *http.Request) (storage.Tenant, bool) {
	ck, err := r.Cookie(CookieName)
	if err != nil {
		return storage.Tenant{}, false
	}
	c.mu.Lock()
	s := c.signIns[ck.Value]
	if s == nil || time.Since(s.seen) > IdleTimeout {
		delete(c.signIns, ck.Value)
		c.mu.Unlock()
		return storage.Tenant{}, false
	}
	s.seen = time.Now()
	trust := c.TokenCache
	if trust == 0 {
		trust = recheck
	}
	stale, token := trust < 0 || time.Since(s.checked) > trust, s.token
	tenant := s.tenant
	c.mu.Unlock()
	if stale {
		// The token may have been revoked since.
		t, err := c.DB.TenantByToken(r.Context(), token)
		c.mu.Lock()
		defer c.mu.Unlock()
		if err != nil || t.ID != tenant.ID {
			delete(c.signIns, ck.Value)
			return storage.Tenant{}, false
		}
		s.checked = time.Now()
	}
	return tenant, true
}

// login shows the sign-in form, and signs in with a tenant's token.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	next := r.URL.Query().Get("next")
	if !localPath(next) {
		next = "/tools"
	}
	data := map[string]any{"Next": next}
	if r.Method == http.MethodPost {
		if !sameOrigin(r) {
			http.Error(w, "sign in from the console's own page", http.StatusForbidden)
			return
		}
		token := strings.TrimSpace(r.PostFormValue("token"))
		t, err := c.DB.TenantByToken(r.Context(), token)
		if err == nil && token != "" {
			id := newID()
			c.mu.Lock()
			c.sweep()
			c.signIns[id] = &signIn{tenant: t, token: token, seen: time.Now(), checked: time.Now()}
			c.mu.Unlock()
			http.SetCookie(w, &http.Cookie{Name: CookieName, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"})
			http.Redirect(w, r, next, http.StatusSeeOther)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		data["Error"] = "That token is not valid."
	}
	c.render(w, r, "login", "Sign in", data)
}

// localPath reports whether a sign-in may send the browser on to p: a
// path of the console itself ("/" and a letter, then no backslash, no
// control character and no second slash at its start; browsers read
// "/\\host" and "/\t/host" as another site).
func localPath(p string) bool {
	if len(p) < 2 || p[0] != '/' || !(p[1] >= 'a' && p[1] <= 'z' || p[1] >= 'A' && p[1] <= 'Z') {
		return false
	}
	for _, r := range p {
		if r == '\\' || r < 0x20 || r == 0x7f {
			return false
		}
	}
	u, err := url.Parse(p)
	return err == nil && u.Scheme == "" && u.Host == "" && u.User == nil
}

// logout forgets the sign-in: a POST from the console's own pages only
// (a link, an image or another site cannot sign the user out).
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !sameOrigin(r) {
		http.Error(w, "sign out with the console's Sign out button", http.StatusForbidden)
		return
	}
	if ck, err := r.Cookie(CookieName); err == nil {
		c.mu.Lock()
		delete(c.signIns, ck.Value)
		c.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// sweep forgets idle sign-ins; c.mu is held.
func (c *Console) sweep() {
	for id, s := range c.signIns {
		if time.Since(s.seen) > IdleTimeout {
			delete(c.signIns, id)
		}
	}
}

func newID() string {
	b := make([]byte, 24)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// render writes a page: the layout around the named template.
func (c *Console) render(w http.ResponseWriter, r *http.Request, page, title string, data map[string]any) {
	t := c.pages[page]
	if t == nil {
		http.Error(w, "no page "+page, http.StatusInternalServerError)
		return
	}
	if data == nil {
		data = map[string]any{}
	}
	data["Title"] = title
	data["Page"] = page
	if v := r.Context().Value(tenantKey{}); v != nil {
		data["Tenant"] = v.(storage.Tenant).Name
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := t.ExecuteTemplate(w, "layout.html", data); err != nil {
		c.Log.Error("console: rendering a page", "page", page, "error", err)
	}
}

// fail answers an error as a page.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	msg := "something went wrong; the server log has the details"
	var ce *consoleError
	var qe *storage.QuotaError
	var ar *admission.Refused
	switch {
	case errors.As(err, &ce):
		code, msg = ce.code, ce.msg
	case errors.As(err, &qe):
		ce = quotaMessage(qe)
		code, msg = ce.code, ce.msg
	case errors.As(err, &ar):
		// A check or a call past the tenant's rate or concurrency, or the
		// node busy: said as the API says it, with when to try again.
		code, msg = http.StatusTooManyRequests, ar.Error()+"; try again in "+strconv.FormatInt(ar.RetryAfterSeconds(), 10)+" s"
		if ar.Reason == admission.ReasonBusy {
			code = http.StatusServiceUnavailable
		}
		w.Header().Set("Retry-After", strconv.FormatInt(ar.RetryAfterSeconds(), 10))
	case errors.Is(err, storage.ErrNotFound):
		code, msg = http.StatusNotFound, "not found"
	default:
		c.Log.Error("console", "path", r.URL.Path, "error", err)
	}
	w.WriteHeader(code)
	c.render(w, r, "error", "Error", map[string]any{"Message": msg, "Code": code})
}

// consoleError is an error a page shows as it is.
type consoleError struct {
	code int
	msg  string
}

func (e *consoleError) Error() string { return e.msg }

// docs is the API reference, /docs: Swagger UI renders the server's
// /v1/openapi.json. Like that document, it needs no sign-in (it shows the
// API, no tenant's data); a signed-in tenant sees the console's menu.
func (c *Console) docs(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "GET", http.StatusMethodNotAllowed)
		return
	}
	if tenant, ok := c.signedIn(r); ok {
		r = r.WithContext(context.WithValue(r.Context(), tenantKey{}, tenant))
	}
	c.render(w, r, "docs", "API reference", nil)
}

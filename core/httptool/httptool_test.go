package httptool

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// TestRefusals: a real server on loopback is reached only when allowed by
// name; loopback, private, link-local and metadata targets are refused
// before any connection, by address and through a DNS name that resolves
// to loopback (localhost), and a redirect from an allowed server to a
// loopback one is refused; the response bound and the timeout hold.
func TestRefusals(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"inner":true}`)) }))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, other.URL+"/", http.StatusFound)
		case "/big":
			w.Write([]byte(strings.Repeat("x", 2000)))
		case "/slow":
			time.Sleep(2 * time.Second)
		default:
			w.Header().Set("X-Seen", r.Header.Get("Authorization"))
			w.Write([]byte(`{"ok":true}`))
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	_, port, _ := strings.Cut(host, ":")
	c := &Client{Allow: []string{host}, MaxResponse: 1000}
	cases := []struct {
		name, url string
		reason    string // "" for success
	}{
		{"allowed test host", srv.URL + "/", ""},
		{"loopback not allowed", other.URL + "/", "loopback"},
		{"loopback through a name", "http://localhost:" + strings.TrimPrefix(other.URL, "http://127.0.0.1:") + "/", "loopback"},
		{"IPv6 loopback", "http://[::1]:" + port + "/", "loopback"},
		{"private 10/8", "http://10.1.2.3/", "private"},
		{"private 192.168/16", "http://192.168.0.10:8080/", "private"},
		{"private 172.16/12", "http://172.16.5.5/", "private"},
		{"link-local", "http://169.254.10.20/", "link-local"},
		{"metadata", "http://169.254.169.254/latest/meta-data/", "cloud metadata"},
		{"unspecified", "http://0.0.0.0:" + port + "/", "unspecified"},
		{"IPv4-mapped loopback", "http://[::ffff:127.0.0.1]:" + port + "/x", ""}, // the allowed host's address and port
		{"redirect to loopback", srv.URL + "/redirect", "loopback"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := c.Do(context.Background(), &Request{Method: "GET", URL: tc.url, Headers: map[string]string{"Authorization": "Bearer k"}}, 5*time.Second)
			var re *RefusedError
			if tc.reason == "" {
				if err != nil || resp.Status != 200 || string(resp.Body) != `{"ok":true}` || resp.Header.Get("X-Seen") != "Bearer k" {
					t.Fatalf("%v %+v", err, resp)
				}
				return
			}
			if !errors.As(err, &re) || re.Reason != tc.reason || !strings.Contains(err.Error(), "is refused") {
				t.Fatalf("%v, want a refusal (%s)", err, tc.reason)
			}
		})
	}
	if _, err := c.Do(context.Background(), &Request{Method: "GET", URL: srv.URL + "/big"}, 5*time.Second); !errors.As(err, new(*TooLargeError)) {
		t.Errorf("big: %v", err)
	}
	if _, err := c.Do(context.Background(), &Request{Method: "GET", URL: srv.URL + "/slow"}, 200*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow: %v", err)
	}
	for _, bad := range []string{"ftp://example.com/", "/relative", "http://"} {
		if _, err := c.Do(context.Background(), &Request{Method: "GET", URL: bad}, time.Second); err == nil || !strings.Contains(err.Error(), "not an http") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// TestForbidden: the address classes.
func TestForbidden(t *testing.T) {
	for addr, want := range map[string]string{
		"8.8.8.8": "", "2606:4700::1111": "", "127.5.5.5": "loopback", "::1": "loopback", "10.0.0.1": "private",
		"fc00::1": "private", "fe80::1": "link-local", "169.254.169.254": "cloud metadata", "100.64.1.1": "shared (carrier-grade NAT)",
		"239.1.1.1": "multicast", "224.0.0.1": "link-local", "::": "unspecified", "::ffff:10.0.0.1": "private",
	} {
		if got := Forbidden(netip.MustParseAddr(addr)); got != want {
			t.Errorf("%s: %q, want %q", addr, got, want)
		}
	}
}

// dnsServer answers A and AAAA queries over UDP on loopback from names
// (a name ending in a dot to its addresses), as a name server a tenant
// controls would: any name, any address.
func dnsServer(t *testing.T, names map[string][]string) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
			b.EnableCompression()
			b.StartQuestions()
			b.Question(q)
			b.StartAnswers()
			rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 1}
			for _, s := range names[q.Name.String()] {
				a := netip.MustParseAddr(s)
				switch {
				case a.Is4() && q.Type == dnsmessage.TypeA:
					b.AResource(rh, dnsmessage.AResource{A: a.As4()})
				case a.Is6() && q.Type == dnsmessage.TypeAAAA:
					b.AAAAResource(rh, dnsmessage.AAAAResource{AAAA: a.As16()})
				}
			}
			msg, err := b.Finish()
			if err == nil {
				pc.WriteTo(msg, from)
			}
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

// TestRefusalsThroughDNS: names that a DNS server (a real one, on
// loopback) resolves to refused addresses are refused before any
// connection: a private, a metadata, a link-local IPv6 and a loopback
// address, a name with one public and one private address (any refused
// address refuses the name), and a redirect from an allowed server to
// such a name. The API itself is reached through a name that resolves to
// its allowed address.
func TestRefusalsThroughDNS(t *testing.T) {
	var reached atomic.Int64
	inner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) }))
	defer inner.Close()
	_, innerPort, _ := strings.Cut(strings.TrimPrefix(inner.URL, "http://"), ":")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "http://internal.test:"+innerPort+"/", http.StatusFound)
			return
		}
		w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	res := dnsServer(t, map[string][]string{
		"api.test.":      {"127.0.0.1"},
		"internal.test.": {"10.1.2.3"},
		"meta.test.":     {"169.254.169.254"},
		"v6.test.":       {"fe80::1"},
		"loop.test.":     {"127.0.0.1", "::1"},
		"mixed.test.":    {"93.184.216.34", "10.0.0.1"},
	})
	c := &Client{Allow: []string{"api.test:" + port}, Resolver: res}
	cases := []struct{ url, reason, addr string }{
		{"http://api.test:" + port + "/", "", ""},
		{"http://internal.test:" + innerPort + "/", "private", "10.1.2.3"},
		{"http://meta.test/latest/meta-data/", "cloud metadata", "169.254.169.254"},
		{"http://v6.test/", "link-local", "fe80::1"},
		{"http://loop.test:" + innerPort + "/", "loopback", ""},
		{"http://mixed.test/", "private", "10.0.0.1"},
		{"http://api.test:" + port + "/redirect", "private", "10.1.2.3"},
	}
	for _, tc := range cases {
		t.Run(tc.url, func(t *testing.T) {
			resp, err := c.Do(context.Background(), &Request{Method: "GET", URL: tc.url}, 5*time.Second)
			if tc.reason == "" {
				if err != nil || resp.Status != 200 || string(resp.Body) != `{"ok":true}` {
					t.Fatalf("%v %+v", err, resp)
				}
				return
			}
			var re *RefusedError
			if !errors.As(err, &re) || re.Reason != tc.reason || (tc.addr != "" && re.Addr != tc.addr) || !strings.Contains(err.Error(), "resolves to") {
				t.Fatalf("%v, want a refusal (%s, %s)", err, tc.reason, tc.addr)
			}
		})
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("a refused target was reached %d times", n)
	}
}

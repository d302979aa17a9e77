package httptool

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
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

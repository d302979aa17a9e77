package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"toolhost/core/geoip/geoiptest"
)

// geoAgent's instructions are the seed's example.
const geoAgent = `kind: Agent
name: Geo Agent
description: Knows where the user is.
instructions: "User's city: __GEOIP__. If user doesn't specify region, use this city."
tool_groups: []
states:
  - kind: StateConfig
    name: Talking
    init_state: true
    final_state: true
    available_tools: [FinishSession]
`

// geoToken sends a tenant's token and the headers of a test.
type geoToken struct {
	token   string
	headers map[string]string
}

func (g geoToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+g.token)
	for k, v := range g.headers {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestGeoIPSubstitution runs serve --geoip with a City database the test
// writes: a session's __GEOIP__ is its caller's city (127.0.0.1 here), in
// the language of --geoip-lang, over the API and MCP; a caller's own
// GEOIP wins; X-Forwarded-For and Toolhost-GeoIP count only from a
// --trusted-proxy.
func TestGeoIPSubstitution(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "city.mmdb")
	if err := geoiptest.Write(db, map[string]geoiptest.Place{
		"127.0.0.0/8":  {City: map[string]string{"en": "Novosibirsk", "ru": "Новосибирск"}},
		"81.2.69.0/24": {City: map[string]string{"en": "London", "ru": "Лондон"}},
	}); err != nil {
		t.Fatal(err)
	}
	instructions := func(t *testing.T, s *server, token string, headers map[string]string, body string) string {
		t.Helper()
		c := &http.Client{Transport: geoToken{token, headers}}
		resp, err := c.Post(s.base+"/v1/sessions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var sess struct {
			ID string `json:"id"`
		}
		json.NewDecoder(resp.Body).Decode(&sess)
		resp.Body.Close()
		if resp.StatusCode != 201 {
			t.Fatalf("session: %d", resp.StatusCode)
		}
		var instr map[string]string
		s.do(token, "GET", "/v1/sessions/"+sess.ID+"/instructions", nil, &instr)
		return instr["instructions"]
	}
	start := func(t *testing.T, extra ...string) (*server, string) {
		s := startServer(t, t.TempDir(), freePort(t), append([]string{"--geoip", db}, extra...)...)
		token := tenant(t, s.data, "acme")
		if code := s.do(token, "POST", "/v1/agents", strings.NewReader(geoAgent), nil); code != 201 {
			t.Fatalf("agent: %d", code)
		}
		return s, token
	}

	t.Run("the caller's address", func(t *testing.T) {
		s, token := start(t, "--geoip-lang", "ru")
		for _, c := range []struct {
			name    string
			headers map[string]string
			body    string
			want    string
		}{
			{"from the database", nil, `{"agent":"Geo Agent"}`, "User's city: Новосибирск."},
			{"the caller's own GEOIP", nil, `{"agent":"Geo Agent","variables":{"GEOIP":"Омск"}}`, "User's city: Омск."},
			{"headers from an untrusted peer", map[string]string{"X-Forwarded-For": "81.2.69.160", "Toolhost-GeoIP": "Paris"}, `{"agent":"Geo Agent"}`, "User's city: Новосибирск."},
		} {
			if got := instructions(t, s, token, c.headers, c.body); !strings.HasPrefix(got, c.want) {
				t.Errorf("%s: %q, want %q", c.name, got, c.want)
			}
		}
		// An MCP agent session is filled too: its instructions.
		client := mcp.NewClient(&mcp.Implementation{Name: "toolhost-test", Version: "1"}, nil)
		tr := &mcp.StreamableClientTransport{Endpoint: s.base + "/mcp/agents/Geo%20Agent", HTTPClient: &http.Client{Transport: geoToken{token: token}}, MaxRetries: -1}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := client.Connect(ctx, tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if got := cs.InitializeResult().Instructions; !strings.HasPrefix(got, "User's city: Новосибирск.") {
			t.Errorf("MCP instructions %q", got)
		}
	})
	t.Run("a trusted proxy", func(t *testing.T) {
		s, token := start(t, "--trusted-proxy", "127.0.0.1")
		for _, c := range []struct {
			name    string
			headers map[string]string
			want    string
		}{
			{"its X-Forwarded-For", map[string]string{"X-Forwarded-For": "81.2.69.160"}, "User's city: London."},
			{"its value", map[string]string{"Toolhost-GeoIP": "%D0%9E%D0%BC%D1%81%D0%BA"}, "User's city: Омск."},
			{"no header: its own address", nil, "User's city: Novosibirsk."},
		} {
			if got := instructions(t, s, token, c.headers, `{"agent":"Geo Agent"}`); !strings.HasPrefix(got, c.want) {
				t.Errorf("%s: %q, want %q", c.name, got, c.want)
			}
		}
	})
}

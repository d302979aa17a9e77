package geoip

import (
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"toolhost/core/geoip/geoiptest"
)

// testDB writes and opens a small City database.
func testDB(t *testing.T, lang string) *DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), "city.mmdb")
	err := geoiptest.Write(path, map[string]geoiptest.Place{
		"127.0.0.0/8":     {City: map[string]string{"en": "Novosibirsk", "ru": "Новосибирск"}, Country: map[string]string{"en": "Russia"}},
		"81.2.69.0/24":    {City: map[string]string{"en": "London"}, Region: map[string]string{"en": "England"}, Country: map[string]string{"en": "United Kingdom"}},
		"203.0.113.0/24":  {Region: map[string]string{"en": "Tasmania"}, Country: map[string]string{"en": "Australia"}},
		"198.51.100.0/24": {Country: map[string]string{"en": "Chile", "ru": "Чили"}},
		"2001:db8::/32":   {City: map[string]string{"en": "Tomsk"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(path, lang)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestPlace(t *testing.T) {
	en, ru := testDB(t, "en"), testDB(t, "ru")
	for _, c := range []struct {
		db       *DB
		addr     string
		want     string
		language string
	}{
		{en, "127.0.0.1", "Novosibirsk", "en"},
		{ru, "127.0.0.1", "Новосибирск", "ru"},
		{en, "::ffff:127.0.0.1", "Novosibirsk", "en"},
		{en, "81.2.69.160", "London", "en"},
		{en, "203.0.113.9", "Tasmania", "en: no city, the region"},
		{ru, "198.51.100.1", "Чили", "ru: the country"},
		{ru, "81.2.69.1", "London", "ru: no Russian name, the English one"},
		{en, "2001:db8::1", "Tomsk", "en"},
		{en, "192.0.2.1", "", "an address the database lacks"},
	} {
		got, err := c.db.Place(netip.MustParseAddr(c.addr))
		if err != nil || got != c.want {
			t.Errorf("%s (%s): %q %v, want %q", c.addr, c.language, got, err, c.want)
		}
	}
	if _, err := Open(filepath.Join(t.TempDir(), "none.mmdb"), "en"); err == nil || !strings.Contains(err.Error(), "the GeoIP database") {
		t.Errorf("a missing file: %v", err)
	}
}

func TestFill(t *testing.T) {
	db := testDB(t, "en")
	trusting, _ := ParseProxies("127.0.0.1, 10.0.0.0/8")
	for _, c := range []struct {
		name     string
		r        *Resolver
		peer     string
		headers  map[string]string
		vars     map[string]any
		want     any // nil: not set
		errorHas string
	}{
		{"the peer's address", &Resolver{DB: db}, "127.0.0.1:5000", nil, nil, "Novosibirsk", ""},
		{"the caller's own variable wins", &Resolver{DB: db}, "127.0.0.1:5000", nil, map[string]any{"GEOIP": "Omsk"}, "Omsk", ""},
		{"an untrusted peer's headers are ignored", &Resolver{DB: db}, "127.0.0.1:5000",
			map[string]string{"X-Forwarded-For": "81.2.69.160", Header: "Paris"}, nil, "Novosibirsk", ""},
		{"a trusted proxy's X-Forwarded-For", &Resolver{DB: db, TrustedProxies: trusting}, "127.0.0.1:5000",
			map[string]string{"X-Forwarded-For": "81.2.69.160, 10.1.2.3"}, nil, "London", ""},
		{"a forged first hop is not believed", &Resolver{DB: db, TrustedProxies: trusting}, "127.0.0.1:5000",
			map[string]string{"X-Forwarded-For": "81.2.69.160, 203.0.113.9"}, nil, "Tasmania", ""},
		{"a trusted proxy's value", &Resolver{DB: db, TrustedProxies: trusting}, "10.9.9.9:5000",
			map[string]string{Header: "%D0%9E%D0%BC%D1%81%D0%BA"}, nil, "Омск", ""},
		{"the value without a database", &Resolver{TrustedProxies: trusting}, "10.9.9.9:5000",
			map[string]string{Header: "Omsk"}, nil, "Omsk", ""},
		{"a bad value", &Resolver{TrustedProxies: trusting}, "10.9.9.9:5000",
			map[string]string{Header: "%zz"}, nil, nil, "is not percent-encoded text"},
		{"an address the database lacks", &Resolver{DB: db}, "192.0.2.1:5000", nil, nil, nil, ""},
		{"no database", &Resolver{}, "127.0.0.1:5000", nil, nil, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", "http://x/v1/sessions", nil)
			req.RemoteAddr = c.peer
			for k, v := range c.headers {
				req.Header.Set(k, v)
			}
			vars := c.vars
			if vars == nil {
				vars = map[string]any{}
			}
			err := c.r.Fill(req, vars)
			if c.errorHas != "" {
				if err == nil || !strings.Contains(err.Error(), c.errorHas) {
					t.Fatalf("error %v, want %q", err, c.errorHas)
				}
				return
			}
			if err != nil || vars["GEOIP"] != c.want {
				t.Errorf("GEOIP = %v (%v), want %v", vars["GEOIP"], err, c.want)
			}
		})
	}
	var none *Resolver
	if err := none.Fill(&http.Request{}, map[string]any{}); err != nil {
		t.Error(err)
	}
}

func TestParseProxies(t *testing.T) {
	ps, err := ParseProxies(" 10.0.0.0/8,192.0.2.7 ,, ::1")
	if err != nil || len(ps) != 3 || ps[1].String() != "192.0.2.7/32" || ps[2].String() != "::1/128" {
		t.Errorf("%v %v", ps, err)
	}
	if _, err := ParseProxies("10.0.0.0/8,proxy.local"); err == nil || !strings.Contains(err.Error(), `"proxy.local" is neither`) {
		t.Errorf("a name: %v", err)
	}
}

// FuzzFill reads any X-Forwarded-For, Toolhost-GeoIP and peer address:
// no panic, the caller's address is the peer's or an untrusted address of
// X-Forwarded-For, and a value comes only from a trusted peer's header or
// the database.
func FuzzFill(f *testing.F) {
	f.Add("127.0.0.1:5000", "81.2.69.160, 10.1.2.3", "%D0%9E%D0%BC%D1%81%D0%BA")
	f.Add("10.9.9.9:1", "::ffff:127.0.0.1,,garbage, 2001:db8::1", "%zz")
	f.Add("[::1]:80", "", "")
	f.Add("nonsense", "1.2.3.4", "x")
	trusting, _ := ParseProxies("127.0.0.1, 10.0.0.0/8, ::1")
	f.Fuzz(func(t *testing.T, peer, xff, value string) {
		r := &Resolver{TrustedProxies: trusting}
		req, _ := http.NewRequest("POST", "http://x/v1/sessions", nil)
		req.RemoteAddr = peer
		req.Header.Set("X-Forwarded-For", xff)
		req.Header.Set(Header, value)
		if a, ok := r.Client(req); ok && r.trusted(a) && !r.fromTrusted(req) {
			t.Fatalf("an untrusted peer %q gave the trusted address %v", peer, a)
		}
		vars := map[string]any{}
		if err := r.Fill(req, vars); err == nil {
			if v, set := vars[Variable]; set && !r.fromTrusted(req) {
				t.Fatalf("GEOIP %v from an untrusted peer %q", v, peer)
			}
		}
	})
}

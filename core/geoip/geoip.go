// Package geoip fills the core's __GEOIP__ substitution (spec 000: "User's
// city: __GEOIP__") from the caller's address, through a MaxMind-format
// database (GeoLite2-City or GeoIP2-City, .mmdb) read with
// github.com/oschwald/maxminddb-golang.
//
// A portal in front of toolhost may instead pass the caller's address
// (X-Forwarded-For) or the value itself (Toolhost-GeoIP) as a header; both
// are trusted only from the proxies configured (TrustedProxies), and
// ignored from anyone else.
package geoip

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/oschwald/maxminddb-golang/v2"
)

// Variable is the session variable the core fills: __GEOIP__ in an
// agent's instructions.
const Variable = "GEOIP"

// Header is the header a trusted proxy may set to the value itself
// (UTF-8, percent-encoded: Toolhost-GeoIP: %D0%9E%D0%BC%D1%81%D0%BA).
const Header = "Toolhost-GeoIP"

// DB is an open GeoIP database.
type DB struct {
	r *maxminddb.Reader
	// langs are the languages of the names, in order of preference.
	langs []string
}

// Open opens a MaxMind-format database; lang is the language of the names
// wanted ("ru", say), English when the database has no name in it.
func Open(path, lang string) (*DB, error) {
	r, err := maxminddb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("the GeoIP database %s: %w", path, err)
	}
	langs := []string{"en"}
	if lang != "" && lang != "en" {
		langs = []string{lang, "en"}
	}
	return &DB{r: r, langs: langs}, nil
}

// Close closes the database.
func (d *DB) Close() error { return d.r.Close() }

// record is the part of a City database's record that Place reads.
type record struct {
	City struct {
		Names map[string]string `maxminddb:"names"`
	} `maxminddb:"city"`
	Subdivisions []struct {
		Names map[string]string `maxminddb:"names"`
	} `maxminddb:"subdivisions"`
	Country struct {
		Names map[string]string `maxminddb:"names"`
	} `maxminddb:"country"`
}

// Place answers where addr is: its city, else its region, else its
// country, in the language asked for; "" when the database does not know
// it (a private address, say).
func (d *DB) Place(addr netip.Addr) (string, error) {
	var rec record
	if err := d.r.Lookup(addr.Unmap()).Decode(&rec); err != nil {
		return "", err
	}
	candidates := []map[string]string{rec.City.Names}
	if len(rec.Subdivisions) > 0 {
		candidates = append(candidates, rec.Subdivisions[0].Names)
	}
	candidates = append(candidates, rec.Country.Names)
	for _, names := range candidates {
		for _, l := range d.langs {
			if n := names[l]; n != "" {
				return n, nil
			}
		}
	}
	return "", nil
}

// Resolver fills GEOIP for a request.
type Resolver struct {
	// DB, when set, is looked the caller's address up in.
	DB *DB
	// TrustedProxies are the addresses whose X-Forwarded-For and
	// Toolhost-GeoIP headers are believed.
	TrustedProxies []netip.Prefix
}

// ParseProxies reads a comma-separated list of addresses and CIDR
// prefixes (10.0.0.0/8, 192.0.2.7).
func ParseProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q is neither an address nor a CIDR prefix", s)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

func (r *Resolver) trusted(a netip.Addr) bool {
	for _, p := range r.TrustedProxies {
		if p.Contains(a.Unmap()) {
			return true
		}
	}
	return false
}

// Client answers the caller's address: the peer's, or, when the peer is a
// trusted proxy, the last address of X-Forwarded-For that is not one.
func (r *Resolver) Client(req *http.Request) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		host = req.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	peer = peer.Unmap()
	if !r.trusted(peer) {
		return peer, true
	}
	var hops []string
	for _, h := range req.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(h, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		if a = a.Unmap(); !r.trusted(a) {
			return a, true
		}
	}
	return peer, true
}

// Fill sets vars[GEOIP] for a session started by req, unless the caller
// gave it: from a trusted proxy's Toolhost-GeoIP header, else from the
// database. It is left unset when neither knows (no database, an address
// it lacks): the placeholder then stays, as any variable's does.
func (r *Resolver) Fill(req *http.Request, vars map[string]any) error {
	if r == nil {
		return nil
	}
	if _, given := vars[Variable]; given {
		return nil
	}
	peer, ok := r.Client(req)
	if !ok {
		return nil
	}
	if h := req.Header.Get(Header); h != "" && r.fromTrusted(req) {
		v, err := url.PathUnescape(h)
		if err != nil {
			return fmt.Errorf("the %s header is not percent-encoded text: %v", Header, err)
		}
		vars[Variable] = v
		return nil
	}
	if r.DB == nil {
		return nil
	}
	place, err := r.DB.Place(peer)
	if err != nil {
		return nil // a record the database cannot decode: unknown
	}
	if place != "" {
		vars[Variable] = place
	}
	return nil
}

// fromTrusted reports whether the request's peer is a trusted proxy.
func (r *Resolver) fromTrusted(req *http.Request) bool {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		host = req.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	return err == nil && r.trusted(a)
}

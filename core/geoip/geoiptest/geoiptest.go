// Package geoiptest writes small MaxMind-format City databases for tests,
// with github.com/maxmind/mmdbwriter: the records have the layout of
// GeoLite2-City's (city, subdivisions, country, each with names by
// language).
package geoiptest

import (
	"net"
	"os"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// Place is where a network is: names by language ("en", "ru"); an empty
// map leaves that level out.
type Place struct {
	City, Region, Country map[string]string
}

// Write writes a City database of the networks (CIDR prefixes, reserved
// ones included: tests run on loopback) to path.
func Write(path string, networks map[string]Place) error {
	w, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "GeoLite2-City", RecordSize: 28, IncludeReservedNetworks: true})
	if err != nil {
		return err
	}
	names := func(m map[string]string) mmdbtype.Map {
		n := mmdbtype.Map{}
		for l, s := range m {
			n[mmdbtype.String(l)] = mmdbtype.String(s)
		}
		return mmdbtype.Map{"names": n}
	}
	for cidr, p := range networks {
		_, network, err := net.ParseCIDR(cidr)
		if err != nil {
			return err
		}
		rec := mmdbtype.Map{}
		if len(p.City) > 0 {
			rec["city"] = names(p.City)
		}
		if len(p.Region) > 0 {
			rec["subdivisions"] = mmdbtype.Slice{names(p.Region)}
		}
		if len(p.Country) > 0 {
			rec["country"] = names(p.Country)
		}
		if err := w.Insert(network, rec); err != nil {
			return err
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

package blocks

// Columns of a table given only its rows (spec 000's own visual example
// is a table of rows alone): one column per key, in order of first
// appearance in the rows.

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
)

// KeyOrder is the order in which a JSON document wrote its objects' keys,
// which a decoded map[string]any has lost: a table's columns follow it.
// The zero KeyOrder (or nil) knows no document; keys are then sorted.
type KeyOrder struct {
	// bySet is, for each set of keys (sorted, joined by NUL), the order
	// of the first object with exactly those keys.
	bySet map[string][]string
	// rank is the position of each key's first appearance anywhere.
	rank map[string]int
	// docs are the documents not read yet: they are read when a table
	// first needs them (most calls have none without columns).
	docs [][]byte
}

// NewKeyOrder is the key order of the JSON documents docs (the tool's
// result, say), read on first use. A document that is not JSON gives what
// could be read of it.
func NewKeyOrder(docs ...[]byte) *KeyOrder {
	return &KeyOrder{bySet: map[string][]string{}, rank: map[string]int{}, docs: docs}
}

// read reads the pending documents.
func (o *KeyOrder) read() {
	for _, doc := range o.docs {
		dec := json.NewDecoder(bytes.NewReader(doc))
		dec.UseNumber()
		o.value(dec)
	}
	o.docs = nil
}

// value reads one JSON value, recording the keys of its objects; it
// reports false when the document ends or is not JSON.
func (o *KeyOrder) value(dec *json.Decoder) bool {
	tok, err := dec.Token()
	if err != nil {
		return false
	}
	switch tok {
	case json.Delim('{'):
		var keys []string
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return false
			}
			key, _ := k.(string)
			keys = append(keys, key)
			if _, ok := o.rank[key]; !ok {
				o.rank[key] = len(o.rank)
			}
			if !o.value(dec) {
				return false
			}
		}
		if _, err := dec.Token(); err != nil {
			return false
		}
		set := setOf(keys)
		if _, ok := o.bySet[set]; !ok {
			o.bySet[set] = keys
		}
	case json.Delim('['):
		for dec.More() {
			if !o.value(dec) {
				return false
			}
		}
		if _, err := dec.Token(); err != nil {
			return false
		}
	}
	return true
}

// setOf names a set of keys.
func setOf(keys []string) string {
	s := append([]string(nil), keys...)
	sort.Strings(s)
	return strings.Join(s, "\x00")
}

// keys is the order of one object's keys: that of the first object of the
// document with the same keys, else by first appearance in the document,
// then alphabetical.
func (o *KeyOrder) keys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	if o != nil {
		o.read()
		if order, ok := o.bySet[setOf(keys)]; ok {
			return order
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		ri, iok := o.rankOf(keys[i])
		rj, jok := o.rankOf(keys[j])
		switch {
		case iok && jok:
			return ri < rj
		case iok != jok:
			return iok
		}
		return keys[i] < keys[j]
	})
	return keys
}

func (o *KeyOrder) rankOf(k string) (int, bool) {
	if o == nil {
		return 0, false
	}
	r, ok := o.rank[k]
	return r, ok
}

// columnsOf are the columns of rows: each key of the rows, titled by
// itself, in order of first appearance (the rows in order, each row's
// keys in the order o knows).
func columnsOf(rows []any, o *KeyOrder) []any {
	seen := map[string]bool{}
	cols := []any{}
	for _, r := range rows {
		m, ok := r.(map[string]any)
		if !ok {
			continue
		}
		for _, k := range o.keys(m) {
			if !seen[k] {
				seen[k] = true
				cols = append(cols, map[string]any{"key": k, "title": k})
			}
		}
	}
	return cols
}

package registry

import (
	"crypto/sha256"
	"encoding/hex"

	"toolhost/core/suggest"
)

// hasher hashes (path, sha256) pairs into a folder name.
type hasher struct{ b []byte }

func newHash() *hasher { return &hasher{} }

func (h *hasher) add(path, sha string) {
	h.b = append(h.b, path...)
	h.b = append(h.b, 0)
	h.b = append(h.b, sha...)
	h.b = append(h.b, '\n')
}

func (h *hasher) sum() string {
	s := sha256.Sum256(h.b)
	return hex.EncodeToString(s[:])[:32]
}

func closest(name string, known []string) string { return suggest.Closest(name, known) }

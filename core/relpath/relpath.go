// Package relpath checks the relative paths that name files in the shared
// file storage: dependency paths in definitions and upload paths alike.
package relpath

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxLen is the longest path accepted, in bytes.
const MaxLen = 255

// Check reports why p is not a clean relative path, or nil when it is one:
// not empty, at most MaxLen bytes, no leading "/", no backslash, no NUL or
// other control character, valid UTF-8, no empty, "." or ".." segment.
func Check(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case len(p) > MaxLen:
		return fmt.Errorf("path is %d bytes long, more than %d", len(p), MaxLen)
	case strings.HasPrefix(p, "/"):
		return errors.New("path is absolute; give it relative to the shared file storage")
	case strings.Contains(p, `\`):
		return errors.New(`path contains a backslash; separate folders with "/"`)
	case strings.ContainsRune(p, 0):
		return errors.New("path contains a NUL byte")
	case !utf8.ValidString(p):
		// A path travels in JSON answers and YAML, which would replace the
		// bad bytes: the listed path would no longer name the file.
		return errors.New("path is not valid UTF-8")
	}
	for _, r := range p {
		if unicode.IsControl(r) {
			return fmt.Errorf("path contains the control character %q", r)
		}
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "":
			return errors.New(`path has an empty segment ("//", or "/" at the end)`)
		case "..":
			return errors.New(`path contains ".."; paths cannot leave the shared file storage`)
		case ".":
			return errors.New(`path contains a "." segment; write it without "./"`)
		}
	}
	return nil
}

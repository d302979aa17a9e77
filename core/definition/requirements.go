package definition

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"toolhost/core/requirements"
)

// CheckRequirements parses every requirements.txt the group lists and
// returns the errors of each, with File set to its dependency path, in the
// order the files are listed. read gives a listed file's bytes (at most
// requirements.MaxFileBytes+1 of them are needed) or an error that wraps
// fs.ErrNotExist when the file is not there: a missing file is left to
// Missing. Any other read error is returned.
func (g *Group) CheckRequirements(read func(path string) ([]byte, error)) ([]Diagnostic, error) {
	var diags []Diagnostic
	seen := map[string]bool{}
	for _, d := range g.Dependencies {
		if !requirements.IsFile(d.Path) || seen[d.Path] {
			continue
		}
		seen[d.Path] = true
		content, err := read(d.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", d.Path, err)
		}
		_, errs := requirements.Parse(content)
		for _, e := range errs {
			diags = append(diags, Diagnostic{File: d.Path, Pos: Pos{e.Line, e.Column}, Message: e.Message})
		}
	}
	return diags, nil
}

// ReadLimited reads at most requirements.MaxFileBytes+1 bytes of r: enough
// for requirements.Parse to refuse a file that is too large without
// reading all of it.
func ReadLimited(r io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, requirements.MaxFileBytes+1))
}

// readUnder reads a listed file inside the folder root; a path that is
// absent, not a regular file, or leads out of root reads as not existing,
// as Missing counts it.
func readUnder(root *os.Root, path string) ([]byte, error) {
	name := filepath.FromSlash(path)
	fi, err := root.Stat(name) // before Open: opening a FIFO would block
	if errors.Is(err, fs.ErrPermission) {
		return nil, err
	}
	if err != nil || !fi.Mode().IsRegular() {
		return nil, fs.ErrNotExist
	}
	f, err := root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadLimited(f)
}

package definition

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Status is the state of a group as the portal shows it.
type Status string

// The statuses a definition check can give. Later stages (installing
// requirements, importing code) add their own.
const (
	// Invalid: the definition has errors.
	Invalid Status = "Invalid"
	// Incomplete: the definition is valid but listed files are missing.
	Incomplete Status = "Incomplete"
	// Ready: valid, and every listed file is present.
	Ready Status = "Ready"
)

// Missing returns the dependency paths of g that are not regular files
// under the folder root, in the order they are listed. Paths are resolved
// inside root only: a symbolic link that leads out of it counts as missing.
func (g *Group) Missing(root string) ([]string, error) {
	dir, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("open the file storage folder: %w", err)
	}
	defer dir.Close()
	var missing []string
	for _, d := range g.Dependencies {
		fi, err := dir.Stat(d.Path)
		switch {
		case err == nil && fi.Mode().IsRegular():
		case errors.Is(err, fs.ErrPermission):
			return nil, fmt.Errorf("check %s: %w", d.Path, err)
		default:
			// Absent, not a regular file, or a link that leads out of root.
			missing = append(missing, d.Path)
		}
	}
	return missing, nil
}

// Check is a definition checked against a file storage folder.
type Check struct {
	*Result
	Status  Status
	Missing []string
}

// CheckFiles loads a definition, checks the listed requirements.txt files
// found under root (their errors make it Invalid too), and, when it is
// valid, looks for its listed files under root.
func CheckFiles(src []byte, root string) (*Check, error) {
	c := &Check{Result: Load(src), Status: Invalid}
	if dir, err := os.OpenRoot(root); err == nil {
		errs, err := c.Group.CheckRequirements(func(p string) ([]byte, error) { return readUnder(dir, p) })
		dir.Close()
		if err != nil {
			return nil, err
		}
		c.Errors = append(c.Errors, errs...)
	}
	if !c.OK() {
		return c, nil
	}
	missing, err := c.Group.Missing(root)
	if err != nil {
		return nil, err
	}
	c.Missing = missing
	c.Status = Ready
	if len(missing) > 0 {
		c.Status = Incomplete
	}
	return c, nil
}

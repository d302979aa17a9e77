// Package testwheel writes minimal pure-Python wheels for tests, by hand:
// PyPI cannot be reached here, and a wheel needs nothing but a zip file
// with its metadata and a RECORD.
package testwheel

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Write writes NAME-VERSION-py3-none-any.whl into dir, holding files (paths
// inside the wheel, such as "name/__init__.py") and the metadata pip needs.
func Write(t testing.TB, dir, name, version string, files map[string]string) {
	t.Helper()
	all := map[string]string{
		fmt.Sprintf("%s-%s.dist-info/METADATA", name, version): fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\n", name, version),
		fmt.Sprintf("%s-%s.dist-info/WHEEL", name, version):    "Wheel-Version: 1.0\nGenerator: toolhost-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
	}
	for p, c := range files {
		all[p] = c
	}
	var record strings.Builder
	for path, content := range all {
		sum := sha256.Sum256([]byte(content))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", path, base64.RawURLEncoding.EncodeToString(sum[:]), len(content))
	}
	recordPath := fmt.Sprintf("%s-%s.dist-info/RECORD", name, version)
	fmt.Fprintf(&record, "%s,,\n", recordPath)
	all[recordPath] = record.String()
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%s-py3-none-any.whl", name, version)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	for path, content := range all {
		w, err := zw.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(content))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

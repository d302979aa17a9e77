package pyhost

import (
	"context"
	"strings"
	"testing"

	"toolhost/plugins"
)

// TestGPythonOnlyWhereLinked: a plugin process without the gpython runtime
// (toolhost-cpython) refuses a gpython group's load with a clear error
// instead of running it some other way.
func TestGPythonOnlyWhereLinked(t *testing.T) {
	s := &Server{}
	_, err := s.Load(context.Background(), &plugins.LoadRequest{Group: "g", Runtime: plugins.RuntimeGPython, Root: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "cpython groups only") {
		t.Fatalf("Load of a gpython group without gpython: %v", err)
	}
}

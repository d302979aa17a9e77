package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestServeDensityOfANestedGroup: `bench --serve-density` copies a group
// with its subfolders, so that the CRM sample (its module in submodules/)
// is measured (issue 28: only the top-level files were copied, and every
// copy stayed Incomplete, missing submodules/crm_logic.py).
func TestServeDensityOfANestedGroup(t *testing.T) {
	t.Parallel()
	samples, _ := filepath.Abs("../../../sample_groups")
	out := filepath.Join(t.TempDir(), "bench.json")
	cmd := exec.Command(bin, "bench", "--n", "10", "--concurrency", "1", "--runtime", "cpython", "--serve-density", "2", "--out", out,
		filepath.Join(samples, "crm_integration", "crm_integration.yaml"), "post_lead", `{"client_name":"Ann","client_email":null}`)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bench --serve-density of the CRM sample: %v\n%s", err, b)
	}
	b, _ := os.ReadFile(out)
	var res []map[string]any
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r["name"] == "toolhost serve, 2 warm groups" {
			if n, _ := r["n"].(float64); n <= 0 {
				t.Errorf("the density row: %v", r)
			}
			return
		}
	}
	t.Errorf("no server density row in %s", b)
}

package main

import (
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
)

// TestStorageQuotasOverHTTP: over the real server, tenant A fills its
// storage quota and is refused (507, with what it uses and may use) with
// nothing stored, while tenant B uploads fine; its group count is bounded
// too (403); a quota changed with `toolhost tenant quota` takes effect
// without a restart, and quotas survive one.
func TestStorageQuotasOverHTTP(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	tokA, tokB := tenant(t, data, "acme"), tenant(t, data, "beta")
	run(t, "tenant", "quota", "acme", "--storage-mb", "1", "--groups", "1", "--data", data)
	s := startServer(t, data, freePort(t))
	kb := func(n int) io.Reader { return bytes.NewReader(bytes.Repeat([]byte("x"), n<<10)) }
	type quotaProblem struct {
		Title     string `json:"title"`
		Detail    string `json:"detail"`
		Resource  string `json:"resource"`
		Used      int64  `json:"used"`
		Requested int64  `json:"requested"`
		Allowed   int64  `json:"allowed"`
	}
	if code := s.do(tokA, "PUT", "/v1/files/a.bin", kb(700), nil); code != 200 {
		t.Fatalf("A's first upload: %d", code)
	}
	var p quotaProblem
	if code := s.do(tokA, "PUT", "/v1/files/b.bin", kb(400), &p); code != 507 || p.Resource != "storage_bytes" ||
		p.Used != 700<<10 || p.Requested != 400<<10 || p.Allowed != 1<<20 || !strings.Contains(p.Detail, "nothing was stored") {
		t.Fatalf("A past its quota: %d %+v", code, p)
	}
	var files []map[string]any
	if s.do(tokA, "GET", "/v1/files", nil, &files); len(files) != 1 {
		t.Errorf("A's files after the refusal: %v", files)
	}
	for _, name := range []string{"one.bin", "two.bin"} {
		if code := s.do(tokB, "PUT", "/v1/files/"+name, kb(900), nil); code != 200 {
			t.Errorf("B's upload %s: %d", name, code)
		}
	}
	group := func(name string) string {
		return "kind: Plugin\nname: " + name + "\ndescription: d\ndependencies: [m.py]\ntools:\n  - {kind: Tool, object_name: O" + name + ", name: n" + name + ", description: d, implementation: m.f, parameters: []}\n"
	}
	if code := s.do(tokA, "POST", "/v1/groups", strings.NewReader(group("G1")), nil); code != 200 && code != 201 {
		t.Fatalf("A's first group: %d", code)
	}
	if code := s.do(tokA, "POST", "/v1/groups", strings.NewReader(group("G2")), &p); code != 403 || p.Resource != "groups" || p.Allowed != 1 {
		t.Errorf("A's second group: %d %+v", code, p)
	}
	var usage struct {
		Tenant string `json:"tenant"`
		Usage  struct {
			StorageBytes int64 `json:"storage_bytes"`
			Groups       int64 `json:"groups"`
		} `json:"usage"`
		Quota struct {
			StorageBytes int64 `json:"storage_bytes"`
			Groups       int64 `json:"groups"`
			Agents       int64 `json:"agents"`
		} `json:"quota"`
	}
	if code := s.do(tokA, "GET", "/v1/usage", nil, &usage); code != 200 || usage.Tenant != "acme" || usage.Usage.StorageBytes != 700<<10 ||
		usage.Usage.Groups != 1 || usage.Quota.StorageBytes != 1<<20 || usage.Quota.Groups != 1 || usage.Quota.Agents != 500 {
		t.Errorf("A's usage: %d %+v", code, usage)
	}

	// Raised while the server runs: the upload that was refused goes in.
	run(t, "tenant", "quota", "acme", "--storage-mb", "2", "--data", data)
	if code := s.do(tokA, "PUT", "/v1/files/b.bin", kb(400), nil); code != 200 {
		t.Errorf("after raising A's quota: %d", code)
	}
	list := run(t, "tenant", "list", "--data", data)
	if !strings.Contains(list, "acme\t1 token(s)\tstorage-mb=2MiB groups=1") || !strings.Contains(list, "beta\t1 token(s)\tdefault quota") {
		t.Errorf("tenant list:\n%s", list)
	}
	resp, err := http.Get(s.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `toolhost_tenant_stored_bytes{tenant="acme"} 1126400`) || !strings.Contains(string(metrics), `toolhost_tenant_stored_bytes{tenant="beta"} 1843200`) {
		t.Errorf("per-tenant metrics:\n%s", metrics)
	}

	// Quotas survive a restart.
	s.kill9()
	s = startServer(t, data, freePort(t))
	if code := s.do(tokA, "PUT", "/v1/files/c.bin", kb(1000), &p); code != 507 || p.Allowed != 2<<20 {
		t.Errorf("after a restart: %d %+v", code, p)
	}
	if code := s.do(tokA, "POST", "/v1/groups", strings.NewReader(group("G2")), &p); code != 403 {
		t.Errorf("groups after a restart: %d %+v", code, p)
	}
	// Bad values are refused with a clear message.
	out, err := exec.Command(bin, "tenant", "quota", "acme", "--groups", "-3", "--data", data).CombinedOutput()
	if exitCode(err) != 2 || !strings.Contains(string(out), "--groups: want a positive whole number, unlimited or default") {
		t.Errorf("a bad quota: %v %s", err, out)
	}
}

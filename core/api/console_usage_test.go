package api

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"toolhost/storage"
)

// TestConsoleUsage: the console's usage page shows what the tenant holds
// against its quota, and a knowledge document past the storage quota is
// refused there with the figures and nothing stored.
func TestConsoleUsage(t *testing.T) {
	srv, token, c, db := consoleServer(t)
	ctx := context.Background()
	tn, err := db.TenantByToken(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetTenantQuota(ctx, tn.ID, storage.Quota{StorageBytes: 100, Groups: 7, CallsPerSecond: 2.5}); err != nil {
		t.Fatal(err)
	}
	if resp, b := request(t, srv, token, "PUT", "/v1/files/m.py", strings.Repeat("x", 40)); resp.StatusCode != 200 {
		t.Fatalf("upload: %d %s", resp.StatusCode, b)
	}
	p := page(t, c, srv, "GET", "/usage", nil)
	for _, want := range []string{"<h1>Usage</h1>", `aria-current="page">Usage`, "<th scope=\"row\">Stored bytes (files and knowledge)</th><td>40</td><td>100</td>",
		"<th scope=\"row\">Groups</th><td>0</td><td>7</td>", "<td>2.5</td>", "1 file stored."} {
		if p.code != 200 || !strings.Contains(p.body, want) {
			t.Errorf("usage page lacks %q: %d\n%s", want, p.code, p.body)
		}
	}
	p = page(t, c, srv, "POST", "/knowledge", url.Values{"name": {"doc"}, "text": {strings.Repeat("w", 61)}})
	if p.code != 507 || !strings.Contains(p.body, "storage quota exceeded: 40 bytes stored, this would add 61, 100 allowed; nothing was stored") {
		t.Errorf("knowledge past the quota: %d\n%s", p.code, p.body)
	}
	if docs, _ := db.Knowledge(ctx, tn.ID); len(docs) != 0 {
		t.Errorf("a refused document was stored: %v", docs)
	}
}

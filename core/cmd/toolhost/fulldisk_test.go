package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFullDisk: a server whose data folder is a small tmpfs, filled up
// while it runs. An upload answers 507 Insufficient Storage and stores
// nothing, /readyz answers 503, a DELETE still works (the node's reserve
// is given to it), what was stored before is intact, and once space is
// back uploads work and /readyz is 200 again (issue 27, point 4: every
// write answered 500, DELETEs too, and /readyz stayed 200).
func TestFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root (make test runs as root)")
	}
	data := t.TempDir()
	if err := syscall.Mount("tmpfs", data, "tmpfs", 0, "size=40m"); err != nil {
		t.Skipf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(data, syscall.MNT_DETACH) })
	tok := tenant(t, data, "acme")
	s := startServer(t, data, freePort(t), "--spares", "0")
	put := func(name string, body []byte) (int, string) {
		r, _ := http.NewRequest("PUT", s.base+"/v1/files/"+name, bytes.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatalf("PUT %s: %v", name, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := put("keep.txt", []byte("kept bytes")); code != 200 {
		t.Fatalf("upload keep.txt: %d %s", code, body)
	}
	if code, body := put("gone.txt", []byte("to delete")); code != 200 {
		t.Fatalf("upload gone.txt: %d %s", code, body)
	}
	if _, err := os.Stat(filepath.Join(data, "disk-reserve")); err != nil {
		t.Fatalf("the server keeps no disk reserve: %v", err)
	}
	// Fill the disk from outside.
	filler := filepath.Join(data, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	for {
		if _, err := f.Write(chunk[:4096]); err != nil {
			break
		}
	}
	f.Close()
	code, body := put("big.bin", bytes.Repeat([]byte("x"), 256<<10))
	if code != http.StatusInsufficientStorage || !strings.Contains(body, "Insufficient Storage") {
		t.Errorf("an upload on a full disk: %d %s, want 507 Insufficient Storage", code, body)
	}
	if code := s.ready(); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz on a full disk: %d, want 503", code)
	}
	if code := s.do(tok, "DELETE", "/v1/files/gone.txt", nil, nil); code != 200 && code != 204 {
		t.Errorf("DELETE on a full disk: %d, want it to work", code)
	}
	var kept []struct {
		Path string `json:"path"`
	}
	s.do(tok, "GET", "/v1/files", nil, &kept)
	paths := ""
	for _, f := range kept {
		paths += f.Path + " "
	}
	if !strings.Contains(paths, "keep.txt") || strings.Contains(paths, "gone.txt") || strings.Contains(paths, "big.bin") {
		t.Errorf("files after the full disk: %q, want keep.txt alone", paths)
	}
	// Space comes back.
	os.Remove(filler)
	if !pollUntil(10*time.Second, func() bool { return s.ready() == 200 }) {
		t.Error("/readyz did not come back once space was freed")
	}
	if code, body := put("big.bin", bytes.Repeat([]byte("x"), 256<<10)); code != 200 {
		t.Errorf("an upload once space is back: %d %s", code, body)
	}
}

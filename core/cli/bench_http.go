package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// serveHTTP measures the tool through a real `toolhost serve` process on
// loopback: the group's folder loaded for tenant "default", then POST
// /v1/calls with the tenant's token over keep-alive connections, exactly
// as the Python standard-library server is called (stdlibHTTP). It is the
// whole HTTP path: authentication, strict JSON, argument checks, the
// pipeline, metrics and the request log.
func serveHTTP(rf runFlags, file, tool string, args []byte, n, conc int) (BenchResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return BenchResult{}, err
	}
	data, err := os.MkdirTemp("", "toolhost-bench-serve-")
	if err != nil {
		return BenchResult{}, err
	}
	defer os.RemoveAll(data)
	dir := *rf.files
	if dir == "" {
		dir = filepath.Dir(file)
	}
	cmd := exec.Command(exe, "serve", "--data", data, "--addr", "127.0.0.1:0", "--load", dir,
		"--runtime", *rf.runtime, "--network", *rf.network, "--workers", fmt.Sprint(max(conc, 1)))
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return BenchResult{}, err
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}()
	token, addr := "", ""
	lines := bufio.NewScanner(stdout)
	for (token == "" || addr == "") && lines.Scan() {
		line := lines.Text()
		if v, ok := strings.CutPrefix(line, "tenant default token: "); ok {
			token = v
		}
		if v, ok := strings.CutPrefix(line, "listening on "); ok {
			addr = v
		}
	}
	if token == "" || addr == "" {
		return BenchResult{}, fmt.Errorf("toolhost serve did not start (token %q, address %q)", token, addr)
	}
	go io.Copy(io.Discard, stdout)
	body, _ := json.Marshal(map[string]any{"tool": tool, "arguments": json.RawMessage(args)})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc + 1,
		DialContext: (&net.Dialer{}).DialContext}}
	call := func() error {
		req, _ := http.NewRequestWithContext(context.Background(), "POST", addr+"/v1/calls", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"success":true`)) {
			return fmt.Errorf("toolhost serve answered %s: %.300s", resp.Status, b)
		}
		return nil
	}
	// The group loads in the background: wait until it answers.
	deadline := time.Now().Add(60 * time.Second)
	for err := call(); err != nil; err = call() {
		if time.Now().After(deadline) {
			return BenchResult{}, fmt.Errorf("the group did not become callable through toolhost serve: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return measureCalls("toolhost "+*rf.runtime+" over HTTP", call, n, conc)
}

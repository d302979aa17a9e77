package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// benchServer is a `toolhost serve` process started by the bench on
// loopback, with a data folder of its own, and a keep-alive client of it.
type benchServer struct {
	cmd    *exec.Cmd
	data   string
	addr   string
	token  string
	client *http.Client
}

// startServe starts `toolhost serve` with the group folders under load for
// tenant "default", the run flags' runtime and network, and extra flags.
func startServe(rf runFlags, load string, conc int, extra ...string) (*benchServer, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	data, err := os.MkdirTemp("", "toolhost-bench-serve-")
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--data", data, "--addr", "127.0.0.1:0", "--load", load,
		"--runtime", *rf.runtime, "--network", *rf.network}, extra...)
	cmd := exec.Command(exe, args...)
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		os.RemoveAll(data)
		return nil, err
	}
	s := &benchServer{cmd: cmd, data: data, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc + 1,
		DialContext: (&net.Dialer{}).DialContext}}}
	lines := bufio.NewScanner(stdout)
	for (s.token == "" || s.addr == "") && lines.Scan() {
		line := lines.Text()
		if v, ok := strings.CutPrefix(line, "tenant default token: "); ok {
			s.token = v
		}
		if v, ok := strings.CutPrefix(line, "listening on "); ok {
			s.addr = v
		}
	}
	if s.token == "" || s.addr == "" {
		s.stop()
		return nil, fmt.Errorf("toolhost serve did not start (token %q, address %q)", s.token, s.addr)
	}
	go io.Copy(io.Discard, stdout)
	return s, nil
}

// stop ends the server as an operator would (SIGTERM, then a kill) and
// removes its data.
func (s *benchServer) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(s.data)
}

// call makes one POST /v1/calls of body.
func (s *benchServer) call(body []byte) error {
	req, _ := http.NewRequestWithContext(context.Background(), "POST", s.addr+"/v1/calls", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
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

// until calls body until it succeeds (the groups load in the background).
func (s *benchServer) until(body []byte) error {
	deadline := time.Now().Add(120 * time.Second)
	for err := s.call(body); err != nil; err = s.call(body) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the group did not become callable through toolhost serve: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// serveHTTP measures the tool through a real `toolhost serve` process on
// loopback: the group's folder loaded for tenant "default", then POST
// /v1/calls with the tenant's token over keep-alive connections, exactly
// as the Python standard-library server is called (stdlibHTTP). It is the
// whole HTTP path: authentication, strict JSON, argument checks, the
// pipeline, metrics and the request log.
func serveHTTP(rf runFlags, file, tool string, args []byte, n, conc int) (BenchResult, error) {
	dir := *rf.files
	if dir == "" {
		dir = filepath.Dir(file)
	}
	s, err := startServe(rf, dir, conc, "--workers", fmt.Sprint(max(conc, 1)))
	if err != nil {
		return BenchResult{}, err
	}
	defer s.stop()
	body, _ := json.Marshal(map[string]any{"tool": tool, "arguments": json.RawMessage(args)})
	if err := s.until(body); err != nil {
		return BenchResult{}, err
	}
	return measureCalls("toolhost "+*rf.runtime+" over HTTP", func() error { return s.call(body) }, n, conc)
}

// groupName matches a definition's top-level name line.
var groupName = regexp.MustCompile(`(?m)^name:.*$`)

// serveDensity holds n copies of the group (each its own group, named
// apart, one worker each) warm in one `toolhost serve` (--max-warm n+1):
// once a call to each has succeeded, densityRounds calls to each in turn
// over HTTP (p50, p99, calls/s), and the proportional memory of the
// server's whole tree less the server process's own, per group.
func serveDensity(rf runFlags, file, tool string, args []byte, n int) (BenchResult, error) {
	dir := *rf.files
	if dir == "" {
		dir = filepath.Dir(file)
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return BenchResult{}, err
	}
	if !groupName.Match(src) {
		return BenchResult{}, fmt.Errorf("%s has no top-level name line to copy it under other names", file)
	}
	load, err := os.MkdirTemp("", "toolhost-bench-groups-")
	if err != nil {
		return BenchResult{}, err
	}
	defer os.RemoveAll(load)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("Density %04d", i)
		g := filepath.Join(load, fmt.Sprintf("g%04d", i))
		if err := os.Mkdir(g, 0o755); err != nil {
			return BenchResult{}, err
		}
		if err := copyGroupFiles(dir, g); err != nil {
			return BenchResult{}, err
		}
		def := groupName.ReplaceAll(src, []byte("name: "+names[i]))
		if err := os.WriteFile(filepath.Join(g, "group.yaml"), def, 0o644); err != nil {
			return BenchResult{}, err
		}
	}
	s, err := startServe(rf, load, 1, "--workers", "1", "--max-warm", fmt.Sprint(n+1))
	if err != nil {
		return BenchResult{}, err
	}
	defer s.stop()
	bodies := make([][]byte, n)
	for i, name := range names {
		bodies[i], _ = json.Marshal(map[string]any{"tool": tool, "group": name, "arguments": json.RawMessage(args)})
	}
	// Every group Ready and warm: a call to each that succeeds.
	for i, b := range bodies {
		if err := s.until(b); err != nil {
			return BenchResult{}, fmt.Errorf("group %s: %v", names[i], err)
		}
	}
	// Warm calls, one to each group in turn.
	lat := make([]time.Duration, 0, n*densityRounds)
	t0 := time.Now()
	for round := 0; round < densityRounds; round++ {
		for i, b := range bodies {
			c0 := time.Now()
			if err := s.call(b); err != nil {
				return BenchResult{}, fmt.Errorf("group %s: %v", names[i], err)
			}
			lat = append(lat, time.Since(c0))
		}
	}
	throughput := float64(len(lat)) / time.Since(t0).Seconds()
	tree := procChildren()
	total, procs, err := tree.pss(s.cmd.Process.Pid)
	if err != nil {
		return BenchResult{}, err
	}
	self, _ := pssKB(s.cmd.Process.Pid)
	return BenchResult{Name: fmt.Sprintf("toolhost serve, %d warm groups", n), Runtime: *rf.runtime,
		P50Us: us(percentile(lat, 50)), P99Us: us(percentile(lat, 99)), CallsPerS: round(throughput), N: len(lat), Groups: n,
		PSSMB: round(float64(total-self<<10) / float64(n) / (1 << 20)), Processes: (procs - 1) / n}, nil
}

// copyGroupFiles copies a group's folder, subfolders included (a group's
// modules may live in packages: the CRM sample's submodules/), to dst,
// leaving out the definitions at its top (each copy gets its own) and
// links.
func copyGroupFiles(dir, dst string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case !d.Type().IsRegular():
			return nil
		case !strings.ContainsRune(rel, filepath.Separator) && strings.HasSuffix(rel, ".yaml"):
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

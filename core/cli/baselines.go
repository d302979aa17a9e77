package cli

// The baselines `toolhost bench --baselines` measures beside toolhost, each
// over the same tool function: what a user would run instead (one python3
// process per call; a small Python HTTP tool server made of the standard
// library) and the floors (a JSON-lines round trip between this Go process
// and a warm python3 over a pipe; the bare call inside python3).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"toolhost/core/definition"
	"toolhost/core/runner"
)

// baselineScript measures the bare call inside one python3: it imports the
// module and times each call.
const baselineScript = `
import importlib.util, json, sys, time
path, func, args, n = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4])
spec = importlib.util.spec_from_file_location("m", path)
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
f = getattr(m, func)
lat = []
for _ in range(n):
    t0 = time.perf_counter_ns(); json.dumps(f(**args)); lat.append(time.perf_counter_ns() - t0)
t0 = time.perf_counter()
for _ in range(n):
    json.dumps(f(**args))
print(json.dumps({"lat": lat, "per_s": n / (time.perf_counter() - t0)}))
`

// naiveScript is the naive host: a new python3 process per call.
const naiveScript = `
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("m", sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
print(json.dumps(getattr(m, sys.argv[2])(**json.loads(sys.argv[3]))))
`

// pipeScript is the floor of a process boundary: one JSON line in, the
// call, one JSON line out, over stdin and stdout.
const pipeScript = `
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("m", sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
f = getattr(m, sys.argv[2])
out = sys.stdout
for line in sys.stdin:
    out.write(json.dumps({"result": f(**json.loads(line))}) + "\n")
    out.flush()
`

// httpScript is the tool server a team would write with the standard
// library alone: one process, threads, HTTP/1.1 keep-alive, TCP_NODELAY;
// POST /call with the arguments, the result as JSON. It prints its port.
const httpScript = `
import importlib.util, json, socket, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
spec = importlib.util.spec_from_file_location("m", sys.argv[1])
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
f = getattr(m, sys.argv[2])
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    def do_POST(self):
        args = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        body = json.dumps({"result": f(**args)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
`

// measureBaselines measures every baseline over the tool's function: n
// calls one after another (latency), and n more from conc callers
// (throughput) where the baseline can serve several.
func measureBaselines(dir string, impl definition.Implementation, args []byte, n, conc int) ([]BenchResult, error) {
	py, err := runner.FindPython()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, impl.File)
	var out []BenchResult
	for _, m := range []func(string, string, definition.Implementation, []byte, int, int) (BenchResult, error){
		naivePerCall, goPipe, bareCall,
	} {
		r, err := m(py.Executable, path, impl, args, n, conc)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// naivePerCall is one python3 process per call (fewer calls: each costs
// tens of ms).
func naivePerCall(python, path string, impl definition.Implementation, args []byte, n, _ int) (BenchResult, error) {
	n = min(n, 100)
	lat := make([]time.Duration, n)
	total := time.Now()
	for i := range lat {
		t0 := time.Now()
		if out, err := exec.Command(python, "-I", "-B", "-c", naiveScript, path, impl.Callable, string(args)).CombinedOutput(); err != nil {
			return BenchResult{}, fmt.Errorf("python3 per call: %v: %s", err, out)
		}
		lat[i] = time.Since(t0)
	}
	return BenchResult{Name: "python3 process per call", P50Us: us(percentile(lat, 50)), P99Us: us(percentile(lat, 99)),
		CallsPerS: round(float64(n) / time.Since(total).Seconds()), N: n}, nil
}

// stdlibHTTP is the standard library's HTTP server in one python3, called
// over loopback with keep-alive connections, measured as toolhost's HTTP
// doors are (measureDoor): its CPU time per call is its process's.
func stdlibHTTP(path string, impl definition.Implementation, args []byte, n, conc int, callers []int) (BenchResult, error) {
	py, err := runner.FindPython()
	if err != nil {
		return BenchResult{}, err
	}
	cmd := exec.Command(py.Executable, "-I", "-B", "-c", httpScript, path, impl.Callable)
	return httpBaseline("python3 stdlib HTTP server", cmd, args, n, conc, callers)
}

// httpBaseline starts a baseline's HTTP server, cmd, which prints its
// loopback port on its first line and answers POST /call with
// {"result": ...}, and measures it as toolhost's HTTP doors are
// (measureDoor): its CPU time per call is its process's and its
// children's.
func httpBaseline(name string, cmd *exec.Cmd, args []byte, n, conc int, callers []int) (BenchResult, error) {
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return BenchResult{}, err
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return BenchResult{}, fmt.Errorf("%s did not start: %v", name, err)
	}
	port, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return BenchResult{}, fmt.Errorf("%s printed %q", name, line)
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/call"
	most := mostCallers(conc, callers)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: most + 1,
		DialContext: (&net.Dialer{}).DialContext}}
	call := func(int) error {
		resp, err := client.Post(url, "application/json", bytes.NewReader(args))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != 200 || !bytes.HasPrefix(b, []byte(`{"result":`)) {
			return fmt.Errorf("%s answered %s: %.300s", name, resp.Status, b)
		}
		return nil
	}
	return measureDoor(name, cmd.Process.Pid, call, n, conc, callers)
}

// goPipe is the floor of one process boundary: this process and a warm
// python3, a JSON line each way over a pipe.
func goPipe(python, path string, impl definition.Implementation, args []byte, n, _ int) (BenchResult, error) {
	cmd := exec.Command(python, "-I", "-B", "-S", "-c", pipeScript, path, impl.Callable)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return BenchResult{}, err
	}
	defer func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	}()
	in := bufio.NewReader(stdout)
	line := append(bytes.TrimSpace(append([]byte(nil), args...)), '\n')
	call := func() error {
		if _, err := stdin.Write(line); err != nil {
			return err
		}
		_, err := in.ReadBytes('\n')
		return err
	}
	// One pipe serves one call at a time: its throughput is its latency's.
	return measureCalls("Go↔python3 pipe (the floor)", call, n, 1)
}

// bareCall is the function called inside python3, no boundary at all.
func bareCall(python, path string, impl definition.Implementation, args []byte, n, _ int) (BenchResult, error) {
	out, err := exec.Command(python, "-I", "-B", "-c", baselineScript, path, impl.Callable, string(args), strconv.Itoa(n)).Output()
	if err != nil {
		return BenchResult{}, fmt.Errorf("bare call: %v", err)
	}
	var bare struct {
		Lat  []int64 `json:"lat"`
		PerS float64 `json:"per_s"`
	}
	if err := json.Unmarshal(out, &bare); err != nil {
		return BenchResult{}, err
	}
	bl := make([]time.Duration, len(bare.Lat))
	for i, v := range bare.Lat {
		bl[i] = time.Duration(v)
	}
	return BenchResult{Name: "bare call inside python3", P50Us: us(percentile(bl, 50)), P99Us: us(percentile(bl, 99)),
		CallsPerS: round(bare.PerS), N: n}, nil
}

// measureCalls times n calls one after another, then n from conc callers.
func measureCalls(name string, call func() error, n, conc int) (BenchResult, error) {
	if err := call(); err != nil { // warm
		return BenchResult{}, fmt.Errorf("%s: %v", name, err)
	}
	lat := make([]time.Duration, n)
	for i := range lat {
		t0 := time.Now()
		if err := call(); err != nil {
			return BenchResult{}, fmt.Errorf("%s: %v", name, err)
		}
		lat[i] = time.Since(t0)
	}
	var failed error
	t0 := time.Now()
	parallel(n, conc, func() {
		if err := call(); err != nil {
			failed = err
		}
	})
	if failed != nil {
		return BenchResult{}, fmt.Errorf("%s: %v", name, failed)
	}
	return BenchResult{Name: name, P50Us: us(percentile(lat, 50)), P99Us: us(percentile(lat, 99)),
		CallsPerS: round(float64(n) / time.Since(t0).Seconds()), N: n, Concurrency: conc}, nil
}

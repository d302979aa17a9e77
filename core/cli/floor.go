package cli

// The floor of toolhost's design, measured beside its HTTP doors: the
// least a Go HTTP server can do to run a tool in a separate, warm python3
// process (net/http, one JSON line each way over a pipe, nothing checked,
// no sandbox). toolhost's calls cross the same two boundaries (the
// client's socket, the worker's pipes), so their CPU per call can come
// near this row's but not below it: the Python standard-library server
// runs the tool in its own process and crosses one.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"

	"toolhost/core/definition"
	"toolhost/core/runner"
)

// EntryBenchFloor is the toolhost binary's entry point that serves the
// floor (ServeFloor); bench starts it, nobody else.
const EntryBenchFloor = "bench-floor-server"

// ServeFloor is the floor's server: args are python3's path, the module's
// file, the function's name and the number of workers. It starts that
// many python3 processes running pipeScript, listens on a loopback port,
// which it prints, and answers POST /call with a worker's line. It runs
// on one P, as toolhost serve starts.
func ServeFloor(args []string) {
	if len(args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: toolhost "+EntryBenchFloor+" PYTHON FILE FUNC WORKERS")
		os.Exit(ExitUsage)
	}
	runtime.GOMAXPROCS(1)
	n, err := strconv.Atoi(args[3])
	if err != nil || n < 1 {
		fmt.Fprintln(os.Stderr, "workers:", args[3])
		os.Exit(ExitUsage)
	}
	type worker struct {
		in  io.Writer
		out *bufio.Reader
	}
	free := make(chan *worker, n)
	for range n {
		cmd := exec.Command(args[0], "-I", "-B", "-S", "-c", pipeScript, args[1], args[2])
		cmd.Stderr = os.Stderr
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(ExitFailure)
		}
		free <- &worker{in: in, out: bufio.NewReader(out)}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(ExitFailure)
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	err = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		wk := <-free
		defer func() { free <- wk }()
		if _, err := wk.in.Write(append(bytes.TrimSpace(body), '\n')); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		line, err := wk.out.ReadBytes('\n')
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(line)
	}))
	fmt.Fprintln(os.Stderr, err)
	os.Exit(ExitFailure)
}

// floorHTTP measures the floor's server as the Python standard-library
// server is measured (httpBaseline): its CPU per call is its process's
// and its workers'. It has a worker for each caller.
func floorHTTP(path string, impl definition.Implementation, args []byte, n, conc int, callers []int) (BenchResult, error) {
	py, err := runner.FindPython()
	if err != nil {
		return BenchResult{}, err
	}
	exe, err := os.Executable()
	if err != nil {
		return BenchResult{}, err
	}
	most := mostCallers(conc, callers)
	cmd := exec.Command(exe, EntryBenchFloor, py.Executable, path, impl.Callable, strconv.Itoa(max(most, 1)))
	cmd.Stderr = os.Stderr
	return httpBaseline(floorName, cmd, args, n, conc, callers)
}

// floorName is the floor's row.
const floorName = "design floor (Go HTTP + pipe)"

package worker

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"toolhost/plugins"
	"toolhost/plugins/frame"
)

// fakeWorker answers each request on real pipes as runner.py would, with
// the request's id; answer shapes what it writes.
func fakeWorker(t *testing.T, answer func(id string) []any) (*Conn, *atomic.Int32) {
	return fakeWorkerThen(t, answer, nil)
}

// fakeWorkerThen is fakeWorker that runs then after each answer.
func fakeWorkerThen(t *testing.T, answer func(id string) []any, then func()) (*Conn, *atomic.Int32) {
	t.Helper()
	reqR, reqW, _ := os.Pipe()
	respR, respW, _ := os.Pipe()
	var stops atomic.Int32
	c := &Conn{Req: reqW, Resp: respR, Stop: func() { stops.Add(1) }}
	go func() {
		for {
			var m map[string]any
			if err := frame.Read(reqR, &m); err != nil {
				return
			}
			for _, a := range answer(m["id"].(string)) {
				frame.Write(respW, a)
			}
			if then != nil {
				then()
			}
		}
	}()
	t.Cleanup(func() { reqW.Close(); respW.Close(); reqR.Close(); respR.Close() })
	return c, &stops
}

func TestExchange(t *testing.T) {
	tests := []struct {
		name    string
		answer  func(id string) []any
		wantErr error
		result  string
		stopped bool
	}{
		{"an answer", func(id string) []any { return []any{map[string]any{"id": id, "ok": true, "result": 7}} }, nil, "7", false},
		{"another call's id", func(string) []any { return []any{map[string]any{"id": "x", "ok": true}} }, ErrForeign, "", true},
		{"an unknown op", func(id string) []any { return []any{map[string]any{"id": id, "op": "shell"}} }, ErrForeign, "", true},
		{"bytes after the answer", func(id string) []any {
			return []any{map[string]any{"id": id, "ok": true}, map[string]any{"id": id, "ok": true}}
		}, ErrForeign, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, stops := fakeWorker(t, tt.answer)
			// Bytes after the answer need a moment to arrive.
			time.Sleep(0)
			a, err := c.Exchange(context.Background(), &Call{Op: "call"}, 1<<20, time.Now().Add(5*time.Second), nil, "")
			if tt.name == "bytes after the answer" && err == nil {
				// The second frame may not have been written yet when the
				// first was read: the next exchange sees it.
				_, err = c.Exchange(context.Background(), &Call{Op: "call"}, 1<<20, time.Now().Add(5*time.Second), nil, "")
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil && string(a.Result) != tt.result {
				t.Errorf("result %s, want %s", a.Result, tt.result)
			}
			if got := stops.Load() > 0; got != tt.stopped {
				t.Errorf("stopped %v, want %v", got, tt.stopped)
			}
		})
	}
}

// A caller that goes away just as its answer comes either gets the answer
// with its worker untouched, or is told it was cancelled: the worker is
// never stopped after a successful exchange has returned (it may be
// serving the next call by then).
func TestCancelAtTheAnswerNeverStopsTheNextCall(t *testing.T) {
	var cancel atomic.Pointer[context.CancelFunc]
	c, stops := fakeWorkerThen(t, func(id string) []any {
		return []any{map[string]any{"id": id, "ok": true, "result": 1}}
	}, func() {
		if f := cancel.Load(); f != nil {
			(*f)()
		}
	})
	answered, cancelled := 0, 0
	for range 1000 {
		ctx, f := context.WithCancel(context.Background())
		cancel.Store(&f)
		before := stops.Load()
		_, err := c.Exchange(ctx, &Call{Op: "call"}, 1<<20, time.Now().Add(5*time.Second), nil, "")
		switch {
		case err == nil:
			answered++
			time.Sleep(200 * time.Microsecond)
			if stops.Load() != before {
				t.Fatal("THE WORKER WAS STOPPED AFTER ITS EXCHANGE HAD SUCCEEDED")
			}
		case errors.Is(err, ErrCancelled):
			cancelled++
		default:
			t.Fatalf("err = %v", err)
		}
		f()
	}
	t.Logf("%d answered, %d cancelled", answered, cancelled)
}

// Bound cuts texts at their limits and refuses a result past its own.
func TestBound(t *testing.T) {
	limits := plugins.Limits{ResultBytes: 10, OutputBytes: 3}.WithDefaults()
	a := &Answer{OK: true, Result: json.RawMessage(`"0123456789"`), Output: "héllo"}
	if te := Bound(a, limits); te == nil || te.Kind != plugins.ErrResult {
		t.Errorf("a result of 12 bytes past 10: %v", te)
	}
	if a.Output != "hé" || !a.OutputTruncated {
		t.Errorf("output %q (%v), want cut on a whole character", a.Output, a.OutputTruncated)
	}
	b := &Answer{OK: true, Result: json.RawMessage(`1`)}
	if te := Bound(b, limits); te != nil {
		t.Errorf("a small result: %v", te)
	}
}

// TestOneTimerPerConn: a Conn's one timer serves each exchange in turn:
// exchanges whose deadlines passed after they ended never stop a later
// one, and a later one that does not answer in time is stopped at its own
// deadline.
func TestOneTimerPerConn(t *testing.T) {
	var silent atomic.Bool
	c, stops := fakeWorker(t, func(id string) []any {
		if silent.Load() {
			return nil
		}
		return []any{map[string]any{"id": id, "ok": true, "result": 1}}
	})
	for i := 0; i < 5; i++ {
		if _, err := c.Exchange(context.Background(), &Call{Op: "call"}, 1<<20, time.Now().Add(20*time.Millisecond), nil, ""); err != nil {
			t.Fatalf("exchange %d: %v", i, err)
		}
		time.Sleep(30 * time.Millisecond) // past its deadline
	}
	if stops.Load() != 0 {
		t.Fatalf("answered exchanges stopped the worker %d times", stops.Load())
	}
	if c.timer == nil {
		t.Fatal("no timer kept")
	}
	silent.Store(true)
	start := time.Now()
	// The fake's pipes stay open: only the timer's stop ends the read, so
	// it is made to close them as a killed worker's would.
	c.Stop = func() { stops.Add(1); c.Resp.SetReadDeadline(time.Now()) }
	_, err := c.Exchange(context.Background(), &Call{Op: "call"}, 1<<20, time.Now().Add(50*time.Millisecond), nil, "")
	if !errors.Is(err, ErrTimeout) || stops.Load() == 0 {
		t.Fatalf("a silent worker: %v after %s, %d stops", err, time.Since(start), stops.Load())
	}
}

// TestReadFrameInOneRead: a frame is read whole however it arrives, and
// bytes read past it are foreign.
func TestReadFrameInOneRead(t *testing.T) {
	for _, size := range []int{0, 10, firstRead - 4, firstRead - 3, firstRead, 3 * firstRead} {
		r, w, _ := os.Pipe()
		body := make([]byte, size)
		for i := range body {
			body[i] = 'a' + byte(i%26)
		}
		go func() { frame.WriteRaw(w, body); w.Close() }()
		got, err := readFrame(r, 1<<20)
		r.Close()
		if err != nil || string(got) != string(body) {
			t.Fatalf("%d bytes: %v, got %d bytes", size, err, len(got))
		}
	}
	r, w, _ := os.Pipe()
	defer r.Close()
	frame.WriteRaw(w, []byte(`{}`))
	w.Write([]byte("extra"))
	w.Close()
	if _, err := readFrame(r, 1<<20); !errors.Is(err, ErrForeign) {
		t.Fatalf("bytes after the frame: %v", err)
	}
}

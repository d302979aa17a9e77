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

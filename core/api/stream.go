package api

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"toolhost/core/pipeline"
	"toolhost/plugins"
)

// StreamProgressEvery is how often a streamed call reports that it runs.
const StreamProgressEvery = time.Second

// wantsStream reports whether a call's request asks for server-sent
// events (Accept: text/event-stream).
func wantsStream(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/event-stream" {
			return true
		}
	}
	return false
}

// streamCall runs a call and answers it as server-sent events: call_text
// ({"tool", "text"}: the call_template rendered on the checked
// arguments) once the arguments are checked and before the tool runs,
// progress ({"tool", "elapsed_s", "message"}) every StreamProgressEvery
// while it runs, then the answer as the last event (answer: the same JSON
// as without the stream, its status in "status"; or error: the problem,
// for a refusal once the stream began). A call refused before its call
// text (unknown tool, bad arguments, a closed session) is answered as
// without the stream: its status and problem, no events.
func (s *Server) streamCall(w http.ResponseWriter, r *http.Request, tool string, run func(ctx context.Context) (*pipeline.Answer, error)) error {
	rc := http.NewResponseController(w)
	var (
		mu      sync.Mutex
		started bool
		done    = make(chan struct{})
		ticking sync.WaitGroup
	)
	send := func(event string, v any) {
		mu.Lock()
		defer mu.Unlock()
		if !started {
			h := w.Header()
			h.Set("Content-Type", "text/event-stream")
			h.Set("Cache-Control", "no-cache")
			h.Set("X-Accel-Buffering", "no") // nginx: do not hold the events back
			w.WriteHeader(http.StatusOK)
			started = true
		}
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		rc.Flush()
	}
	began := time.Now()
	var once sync.Once
	ctx := pipeline.WithTrace(r.Context(), &pipeline.Trace{CallText: func(text string) {
		once.Do(func() {
			send("call_text", map[string]any{"tool": tool, "text": text})
			ticking.Add(1)
			go func() {
				defer ticking.Done()
				t := time.NewTicker(StreamProgressEvery)
				defer t.Stop()
				for {
					select {
					case <-done:
						return
					case <-t.C:
						d := time.Since(began).Seconds()
						send("progress", map[string]any{"tool": tool, "elapsed_s": d, "message": fmt.Sprintf("%s: running for %.1f s", tool, d)})
					}
				}
			}()
		})
	}})
	a, err := run(ctx)
	close(done)
	ticking.Wait()
	mu.Lock()
	streaming := started
	mu.Unlock()
	if err != nil {
		if !streaming {
			return err
		}
		p, ok := problemFor(err)
		if !ok {
			s.Log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		}
		send("error", problemBody(p))
		return nil
	}
	status := http.StatusOK
	if a.Error != nil && a.Error.Kind == plugins.ErrUnavailable {
		status = http.StatusServiceUnavailable
	}
	body, _ := json.Marshal(a)
	var m map[string]any
	json.Unmarshal(body, &m)
	m["status"] = status
	send("answer", m)
	return nil
}

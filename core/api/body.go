package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"toolhost/core/definition"
	"toolhost/core/strictjson"
)

// The defaults of the request body limits (see Server).
const (
	DefaultBodyGrace   = 10 * time.Second
	DefaultBodyMinRate = 32 << 10 // bytes per second
	DefaultMaxUploads  = 16
)

// A request body must arrive at no less than a minimum rate after a grace
// period: by grace + n/rate after the request started, at least n bytes
// must have come. The deadline is the connection's read deadline, moved on
// before every read of the body and cleared once it ends, so a call that
// runs for minutes after its body has arrived keeps its connection (and
// the write side never gets a deadline). A body that falls behind is cut:
// the read fails, the handler answers 408 and the connection is closed.
//
// Why a rate and not one fixed deadline: a fixed deadline short enough to
// stop a slow-loris upload cuts a legitimate 50 MiB upload over a slow
// link, and one long enough for that lets an attacker hold a connection
// for it while sending nothing; a rate makes holding a connection cost
// the client bandwidth for as long as it holds it.
type bodyClock struct {
	body     io.ReadCloser
	rc       *http.ResponseController
	start    time.Time
	grace    time.Duration
	rate     int64
	n        int64
	ended    bool
	timedOut bool
	release  func()
	once     sync.Once
}

type bodyClockKey struct{}

// deadline is when the next byte must have come.
func (c *bodyClock) deadline() time.Time {
	return c.start.Add(c.grace + time.Duration(float64(c.n+1)/float64(c.rate)*float64(time.Second)))
}

func (c *bodyClock) Read(p []byte) (int, error) {
	if c.ended {
		return c.body.Read(p)
	}
	c.rc.SetReadDeadline(c.deadline())
	n, err := c.body.Read(p)
	c.n += int64(n)
	switch {
	case err == io.EOF:
		// The body is in: nothing may cut the connection while the call
		// runs (net/http reads on in the background to notice a client
		// that hangs up, and a deadline there would cancel the request).
		// net/http clears the deadline itself when that read starts; this
		// does not depend on it.
		c.ended = true
		c.rc.SetReadDeadline(time.Time{})
		c.done()
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.timedOut = true
		c.done()
	case err != nil:
		c.done()
	}
	return n, err
}

func (c *bodyClock) Close() error { return c.body.Close() }

// done frees the tenant's upload slot, once.
func (c *bodyClock) done() {
	c.once.Do(func() {
		if c.release != nil {
			c.release()
		}
	})
}

// timeBodies puts every request body on the clock of the body rate, before
// authentication: a body nobody reads is still read (and discarded) by
// net/http after the handler, under the same deadline.
func (s *Server) timeBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		c := &bodyClock{body: r.Body, rc: http.NewResponseController(w), start: time.Now(), grace: s.BodyGrace, rate: s.BodyMinRate}
		c.rc.SetReadDeadline(c.deadline())
		r.Body = c
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), bodyClockKey{}, c)))
		c.done()
	})
}

// smallBody is the size up to which a request body takes no upload slot:
// a call's arguments, a session's action, a definition. Such a body is
// still on the body clock (it must come at the minimum rate after the
// grace), so it holds its connection for seconds at most; counting it
// let 16 slow calls of a tenant lock it out of every call (issue 25).
const smallBody = 64 << 10

// takeUploadSlot counts the request's body against its tenant's bodies in
// transfer until the body ends; past MaxUploads it is a 429. A body of a
// known size up to smallBody takes no slot.
func (s *Server) takeUploadSlot(r *http.Request, tenant int64) error {
	c, ok := r.Context().Value(bodyClockKey{}).(*bodyClock)
	if !ok || r.ContentLength >= 0 && r.ContentLength <= smallBody {
		return nil
	}
	s.uploadsMu.Lock()
	defer s.uploadsMu.Unlock()
	if s.uploads[tenant] >= s.MaxUploads {
		return newProblem(http.StatusTooManyRequests, "Too many uploads",
			fmt.Sprintf("a tenant may send at most %d request bodies at once; this one was not read", s.MaxUploads), nil).
			withHeader("Connection", "close").withHeader("Retry-After", "1")
	}
	if s.uploads == nil {
		s.uploads = map[int64]int{}
	}
	s.uploads[tenant]++
	c.release = func() {
		s.uploadsMu.Lock()
		defer s.uploadsMu.Unlock()
		if s.uploads[tenant]--; s.uploads[tenant] <= 0 {
			delete(s.uploads, tenant)
		}
	}
	return nil
}

// bodyError is the problem of a body that could not be read: 408 when it
// came too slowly (and the connection closes), else 400. It is nil when
// err is no read error of the body.
func (s *Server) bodyError(r *http.Request, err error) *Problem {
	c, _ := r.Context().Value(bodyClockKey{}).(*bodyClock)
	switch {
	case c != nil && c.timedOut:
		return newProblem(http.StatusRequestTimeout, "Request body too slow",
			fmt.Sprintf("the request body must arrive at no less than %d KiB/s after the first %s; the server stopped reading it after %d bytes, and nothing was stored",
				s.BodyMinRate>>10, s.BodyGrace, c.n), nil).
			withHeader("Connection", "close")
	case err != nil && (errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, os.ErrDeadlineExceeded)):
		return newProblem(http.StatusBadRequest, "Bad request", "the request body could not be read: "+err.Error(), nil)
	}
	return nil
}

// readBody reads a raw request body of at most limit bytes: past it, the
// error is tooLarge.
func (s *Server) readBody(r *http.Request, limit int64, tooLarge *Problem) ([]byte, error) {
	body, err := s.readUpTo(r, limit)
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > limit {
		return nil, tooLarge
	}
	return body, nil
}

// readUpTo reads a request body, or its first limit+1 bytes when it is
// longer (the caller says what a longer one means).
func (s *Server) readUpTo(r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		if p := s.bodyError(r, err); p != nil {
			return nil, p
		}
		return nil, newProblem(http.StatusBadRequest, "Bad request", err.Error(), nil)
	}
	return body, nil
}

// readDefinition reads a YAML definition body (a group's or an agent's).
func (s *Server) readDefinition(r *http.Request) ([]byte, error) {
	return s.readBody(r, definition.MaxSize, newProblem(http.StatusRequestEntityTooLarge, "Definition too large",
		fmt.Sprintf("a definition is limited to %d bytes", definition.MaxSize), nil))
}

// maxJSONBody bounds the JSON bodies of requests (files and definitions
// have their own limits).
const maxJSONBody = 8 << 20

// maxJSONDepth bounds the nesting of a JSON body: encoding/json's own
// bound. (Tool arguments have a tighter one of their own.)
const maxJSONDepth = strictjson.DefaultMaxDepth

// decodeJSON reads a JSON request body into v: one JSON object and nothing
// after it (trailing data is a client bug, two objects or a cut-and-paste,
// better reported than ignored), no unknown fields, and no key twice in
// any object of it, however deep (encoding/json would take the last one:
// {"tool":"a","tool":"b"} would run b). It is the one place the API reads
// JSON bodies; its error is a 400, 408 or 413 problem.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	var body []byte
	var err error
	if rb, ok := r.Body.(*readBody); ok && !rb.touched && len(rb.b) <= maxJSONBody {
		// Read already (a session's request, before its lock), within
		// the bound, and not read from since: those bytes are the body.
		body = rb.b
	} else {
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return newProblem(http.StatusRequestEntityTooLarge, "Body too large", fmt.Sprintf("a JSON request body is limited to %d bytes", maxJSONBody), nil)
	case err != nil:
		if p := s.bodyError(r, err); p != nil {
			return p
		}
		return newProblem(http.StatusBadRequest, "Bad request", "the request body could not be read: "+err.Error(), nil)
	}
	err = strictjson.Check(body, strictjson.Options{MaxDepth: maxJSONDepth})
	var dup *strictjson.DuplicateKeyError
	if errors.As(err, &dup) {
		return newProblem(http.StatusBadRequest, "Duplicate key",
			fmt.Sprintf("duplicate key %q in the request body (%s)", dup.Key, dup.Where()),
			map[string]any{"key": dup.Key, "path": dup.Path, "offset": dup.Offset})
	}
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		err = dec.Decode(v)
	}
	if err != nil {
		return newProblem(http.StatusBadRequest, "Bad request body", "the body must be a JSON object: "+err.Error(), nil)
	}
	return nil
}

// decodeBody is decodeJSON for a handler that answers its own errors: it
// answers the problem and false when it cannot read the body.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := s.decodeJSON(w, r, v); err != nil {
		s.writeError(w, r, err)
		return false
	}
	return true
}

// readBody is a request body read already (readUpTo), kept as its bytes so
// that decodeJSON takes them as they are rather than copying them again.
// Read as a reader it is marked touched: its bytes are then no longer
// the whole of what is left to read.
type readBody struct {
	b       []byte
	r       bytes.Reader
	touched bool
}

// newReadBody makes a request body of bytes read already.
func newReadBody(b []byte) *readBody {
	rb := &readBody{b: b}
	rb.r.Reset(b)
	return rb
}

// Read implements io.Reader.
func (rb *readBody) Read(p []byte) (int, error) {
	rb.touched = true
	return rb.r.Read(p)
}

// Close implements io.Closer.
func (rb *readBody) Close() error { return nil }

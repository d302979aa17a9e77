package api

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"
)

// TestRequestLineAsSlogWrites: the request line built by hand has the
// keys and values of Log's JSON handler's line, and a path JSON must
// escape goes through the handler.
func TestRequestLineAsSlogWrites(t *testing.T) {
	for _, path := range []string{"/v1/calls", `/v1/groups/a"b\c`, "/v1/x\u00e9"} {
		var fast, slow bytes.Buffer
		r := httptest.NewRequest("POST", "http://h/x", nil)
		r.URL.Path = path
		s := &Server{RequestLog: &fast}
		s.logRequest(r, 201, 1234567*time.Nanosecond)
		(&Server{Log: slog.New(slog.NewJSONHandler(&slow, nil))}).logRequest(r, 201, 1234567*time.Nanosecond)
		var got, want map[string]any
		if err := json.Unmarshal(fast.Bytes(), &got); err != nil {
			t.Fatalf("%s: not JSON: %q", path, fast.String())
		}
		json.Unmarshal(slow.Bytes(), &want)
		for _, m := range []map[string]any{got, want} {
			if _, err := time.Parse(time.RFC3339Nano, m["time"].(string)); err != nil {
				t.Errorf("%s: time %v", path, m["time"])
			}
			delete(m, "time")
		}
		if !reflect.DeepEqual(got, want) || bytes.Count(fast.Bytes(), []byte("\n")) != 1 {
			t.Errorf("%s: %q, slog wrote %q", path, fast.String(), slow.String())
		}
	}
}

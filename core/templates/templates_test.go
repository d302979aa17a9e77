package templates

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
	"toolhost/core/internal/testbin"
)

var toolhostBin string

func TestMain(m *testing.M) {
	var cleanup func()
	toolhostBin, cleanup = testbin.Build()
	code := m.Run()
	cleanup()
	os.Exit(code)
}

func data(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSpecExamples renders the templates of spec 000 as written.
func TestSpecExamples(t *testing.T) {
	d := data(t, `{"input":{"query":"Toyota"},"extracted":{"total":3,"count":2,"items":[{"model":"A","price":100},{"model":"B","price":null}],"ok":true},"error":"boom"}`)
	tests := []struct {
		src   string
		value bool
		want  string // JSON of the result
	}{
		{"Ищу {{ input.query }}...", false, `"Ищу Toyota..."`},
		{"{{ extracted.total }} найдено", false, `"3 найдено"`},
		{"⚠️ {{ error }}", false, `"⚠️ boom"`},
		{"Найдено **{{ extracted.count }}**", false, `"Найдено **2**"`},
		{"{{ extracted.items | tojson }}", true, `[{"model":"A","price":100},{"model":"B","price":null}]`},
		{"{{ extracted.items | length }}", true, `2`},
		{"{{ extracted.ok }}", true, `true`},
		{"{{ extracted.items[1].price }}", true, `null`},
		{"ok={{ extracted.ok }} price={{ extracted.items[1].price }}", false, `"ok=true price=null"`},
		{"{% if extracted.items[1].price is none %}none{% endif %}{% if not extracted.items[1].price %}!{% endif %}", false, `"none!"`},
		{"{{ missing }}", true, `null`},
	}
	for _, tt := range tests {
		got, err := RenderLocal(tt.src, d, tt.value, 1<<16)
		if err != nil {
			t.Errorf("%q: %v", tt.src, err)
			continue
		}
		b, _ := json.Marshal(got)
		if string(b) != tt.want {
			t.Errorf("%q = %s, want %s", tt.src, b, tt.want)
		}
	}
}

func TestCheck(t *testing.T) {
	if err := Check("{{ a }} {% for x in y %}{{ x }}{% endfor %}"); err != nil {
		t.Error(err)
	}
	for src, want := range map[string]string{
		"{% for x in y %}":                   "",
		"{{ a ":                              "",
		strings.Repeat("(", 100) + "{{ a }}": "nested more than",
		strings.Repeat("x", MaxSource+1):     "longer than",
	} {
		err := Check(src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%.30q) = %v", src, err)
		}
	}
	if err := Check("line one\n{% if %}"); err == nil || strings.Contains(err.Error(), "line one") || !strings.Contains(err.Error(), `"if"`) {
		t.Errorf("syntax error: %#v", err)
	}
}

// TestHostileTemplates: reading files, endless loops, deep recursion and
// huge output each fail their render with a clear error, and the renderer
// keeps working.
func TestHostileTemplates(t *testing.T) {
	r := NewRenderer(toolhostBin, 2, 2*time.Second, 1<<16)
	defer r.Close()
	ctx := context.Background()
	tests := []struct{ src, want string }{
		{"{% include '/etc/hostname' %}", "unknown path"},
		{"{% for i in range(100000000) %}{% for j in range(100000000) %}{% endfor %}{% endfor %}", "did not finish within 2s"},
		{"{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", ""},
		{"{% for i in range(1000000) %}xxxxxxxxxxxxxxxx{% endfor %}", "longer than 65536 bytes"},
	}
	for _, tt := range tests {
		_, err := r.Render(ctx, tt.src, nil, false)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%.40q: %v, want %q", tt.src, err, tt.want)
		}
		if got, err := r.Render(ctx, "{{ a }}!", map[string]any{"a": "still"}, false); err != nil || got != "still!" {
			t.Fatalf("after %.40q: %v %v", tt.src, got, err)
		}
	}
}

func FuzzRender(f *testing.F) {
	f.Add("{{ a }}", `{"a":1}`)
	f.Add("{% for x in l %}{{ x | tojson }}{% endfor %}", `{"l":[1,null,true]}`)
	f.Add("{{ a | length }} {{ b is none }}", `{"a":"xyz","b":null}`)
	f.Fuzz(func(t *testing.T, src, js string) {
		var d map[string]any
		if json.Unmarshal([]byte(js), &d) != nil {
			return
		}
		// Only templates that parse are rendered, and without loops over
		// ranges (the worker bounds those by time; a fuzz run must not hang).
		if Check(src) != nil || strings.Contains(src, "range") || strings.Contains(src, "macro") {
			return
		}
		RenderLocal(src, d, true, 1<<12)
	})
}

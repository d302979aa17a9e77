// Package templates compiles and renders the MiniJinja-style templates of
// tool definitions (ui templates, output, visual blocks) with gonja v2.
//
// Compiling happens in-process, after a size and nesting check that keeps
// the parser's recursion bounded. Rendering happens only in a worker
// process (Renderer), because gonja has no execution limits: a template
// that loops without end is killed at its deadline, one that recurses
// until the stack overflows crashes only its worker. Templates can never
// read files: the loader is in memory and holds the one template.
//
// The post-render rule of the spec holds: null and booleans render as JSON
// null/true/false, and `tojson` and `length` work as in its examples.
package templates

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/nikolalohinski/gonja/v2"
	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
)

// MaxSource is the longest template accepted, in bytes.
const MaxSource = 16 << 10

// maxNesting bounds brackets and blocks, so that parsing cannot recurse
// without end.
const maxNesting = 48

// IsTemplate reports whether a string holds template syntax.
func IsTemplate(s string) bool {
	return strings.Contains(s, "{{") || strings.Contains(s, "{%") || strings.Contains(s, "{#")
}

// Error is a template that does not compile or render.
type Error struct {
	// Line and Column are inside the template (1-based; 0 when unknown).
	Line, Column int
	Msg          string
}

// Error implements error.
func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
	}
	return e.Msg
}

var posRe = regexp.MustCompile(`\(Line: (\d+) Col: (\d+)`)

// Check compiles a template and reports its syntax errors.
func Check(src string) error {
	_, err := compile(src)
	return err
}

func compile(src string) (*exec.Template, error) {
	if len(src) > MaxSource {
		return nil, &Error{Msg: fmt.Sprintf("template of %d bytes is longer than %d", len(src), MaxSource)}
	}
	depth, max := 0, 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		}
		if depth > max {
			max = depth
		}
	}
	if max > maxNesting || strings.Count(src, "{%") > 2000 {
		return nil, &Error{Msg: fmt.Sprintf("template nested more than %d deep", maxNesting)}
	}
	if err := guard(src); err != nil {
		return nil, err
	}
	return parse(src)
}

// parse runs gonja's parser. A panic inside it (a bug of the library, never
// of the template's author) becomes an error of that template, so that no
// definition can crash the process that checks it.
func parse(src string) (tpl *exec.Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			tpl, err = nil, &Error{Msg: fmt.Sprintf("the template engine failed on this template (%v)", r)}
		}
	}()
	loader := loaders.MustNewMemoryLoader(map[string]string{"/template": src})
	tpl, err = exec.NewTemplate("/template", gonja.DefaultConfig, loader, environment)
	if err != nil {
		e := &Error{Msg: parsePrefix.ReplaceAllString(err.Error(), "")}
		if m := posRe.FindStringSubmatch(err.Error()); m != nil {
			fmt.Sscan(m[1], &e.Line)
			fmt.Sscan(m[2], &e.Column)
		}
		return nil, e
	}
	return tpl, nil
}

// compiled caches compiled templates: a worker renders the same templates
// call after call. It is reset when full.
var (
	compiledMu sync.Mutex
	compiled   = map[string]*exec.Template{}
)

func cachedCompile(src string) (*exec.Template, error) {
	compiledMu.Lock()
	tpl, ok := compiled[src]
	compiledMu.Unlock()
	if ok {
		return tpl, nil
	}
	tpl, err := compile(src)
	if err != nil {
		return nil, err
	}
	compiledMu.Lock()
	if len(compiled) >= 512 {
		compiled = map[string]*exec.Template{}
	}
	compiled[src] = tpl
	compiledMu.Unlock()
	return tpl, nil
}

// environment is gonja's, with the "none" test aware of JSON null.
var environment = func() *exec.Environment {
	tests := exec.NewTestSet(map[string]exec.TestFunction{})
	tests.Update(builtins.Tests)
	tests.Replace("none", func(_ *exec.Context, in *exec.Value, _ *exec.VarArgs) (bool, error) {
		if in.IsNil() {
			return true, nil
		}
		_, null := in.Interface().(jsonNull)
		return null, nil
	})
	return &exec.Environment{
		Context:           exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables),
		Filters:           builtins.Filters,
		Tests:             tests,
		ControlStructures: builtins.ControlStructures,
		Methods:           builtins.Methods,
	}
}()

// jsonNull is JSON null inside template data: it renders as "null", is
// false, and tojson writes null.
type jsonNull map[string]any

func (jsonNull) String() string { return "null" }

// MarshalJSON writes null.
func (jsonNull) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

// jsonBool is a boolean that renders as true/false.
type jsonBool bool

func (b jsonBool) String() string {
	if b {
		return "true"
	}
	return "false"
}

// prepare converts decoded JSON for rendering: null and booleans render as
// JSON does.
func prepare(v any) any {
	switch x := v.(type) {
	case nil:
		return jsonNull(nil)
	case bool:
		return jsonBool(x)
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = prepare(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = prepare(e)
		}
		return out
	}
	return v
}

// limitWriter fails once more than n bytes are written.
type limitWriter struct {
	b strings.Builder
	n int
}

var errTooLong = errors.New("output too long")

// Write stores p, or panics with errTooLong once the output would pass
// the limit: gonja keeps looping after a failed write, so an error alone
// would let `{% for %}` run to its end (or the deadline); execute recovers
// the panic and the render stops at once.
func (w *limitWriter) Write(p []byte) (int, error) {
	if w.b.Len()+len(p) > w.n {
		panic(errTooLong)
	}
	return w.b.Write(p)
}

var (
	singleExpr     = regexp.MustCompile(`^\s*\{\{(.*)\}\}\s*$`)
	endsWithToJSON = regexp.MustCompile(`\|\s*tojson\s*$`)
	parsePrefix    = regexp.MustCompile(`(?s)^failed to parse template '.*?': `)
)

// RenderLocal renders a template with data (decoded JSON) in this process,
// its output bounded by maxOut bytes. With value set, a template that is a
// single {{ expression }} yields the expression's JSON value (null, true,
// numbers, lists, ...) and any other template yields its text. It is what
// the worker runs; nothing else should call it on untrusted templates.
func RenderLocal(src string, data map[string]any, value bool, maxOut int) (any, error) {
	expr := singleExpr.FindStringSubmatch(src)
	if value && expr != nil && !strings.Contains(expr[1], "}}") && !strings.Contains(expr[1], "{{") {
		if !endsWithToJSON.MatchString(expr[1]) {
			src = "{{ (" + expr[1] + ") | tojson }}"
		}
	} else {
		value = false
	}
	tpl, err := cachedCompile(src)
	if err != nil {
		return nil, err
	}
	ctx := map[string]any{}
	for k, v := range data {
		ctx[k] = prepare(v)
	}
	w := &limitWriter{n: maxOut}
	if err := execute(tpl, w, exec.NewContext(ctx)); err != nil {
		if errors.Is(err, errTooLong) || strings.Contains(err.Error(), errTooLong.Error()) {
			return nil, &Error{Msg: fmt.Sprintf("the rendered output is longer than %d bytes", maxOut)}
		}
		return nil, &Error{Msg: "render failed: " + strings.TrimPrefix(err.Error(), "unable to execute template: ")}
	}
	if !value {
		return w.b.String(), nil
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(w.b.String()))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return w.b.String(), nil
	}
	return v, nil
}

// execute runs a compiled template, turning a panic of the engine into an
// error of this render: gonja v2.9.1 panics on some expressions, such as
// an integer modulo by zero (`{{ x % 0 }}`, found by FuzzRender). A stack
// overflow (a recursive macro) cannot be recovered; the worker process
// dies and that render fails as a crash.
func execute(tpl *exec.Template, w io.Writer, ctx *exec.Context) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if p == errTooLong {
				err = errTooLong
				return
			}
			msg := fmt.Sprint(p)
			if strings.Contains(msg, "divide by zero") {
				msg = "division by zero"
			}
			err = fmt.Errorf("the template engine failed: %s", msg)
		}
	}()
	return tpl.Execute(w, ctx)
}

var _ io.Writer = (*limitWriter)(nil)

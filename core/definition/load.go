package definition

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"toolhost/core/relpath"
	"toolhost/core/suggest"
	"toolhost/core/typeexpr"
)

// The keys of each object of the format, in the order the spec lists them.
var (
	groupKeys     = []string{"kind", "name", "description", "dependencies", "secrets", "tools", "skills"}
	groupRequired = []string{"kind", "name", "description"}
	toolRequired  = []string{"kind", "object_name", "name", "description"}
	toolKeys      = append([]string{"kind", "object_name", "name", "description", "implementation", "http", "parameters"}, pipelineKeys...)
	paramKeys     = []string{"name", "type", "description", "optional"}
	paramRequired = []string{"name", "type", "description"}
	skillKeys     = []string{"kind", "name", "description", "implementation", "session_init_call", "session_finish_call", "inputs"}
	skillRequired = []string{"kind", "name", "description", "implementation"}
	inputKeys     = []string{"name", "description", "dtype"}
	inputRequired = inputKeys
)

var (
	// toolNameRe is what every model API accepts as a function name
	// (OpenAI's rule, the narrowest).
	toolNameRe = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	// objectNameRe keeps object_names listable in a workflow's YAML.
	objectNameRe = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	// identRe is an ASCII Python identifier; parameter names are passed as
	// keyword arguments and must also be JSON property names every API takes.
	identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
	// implRe is "module.callable".
	implRe = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)$`)
)

// pythonKeywords cannot be parameter, module or callable names.
var pythonKeywords = map[string]bool{
	"False": true, "None": true, "True": true, "and": true, "as": true, "assert": true, "async": true,
	"await": true, "break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true,
	"else": true, "except": true, "finally": true, "for": true, "from": true, "global": true, "if": true,
	"import": true, "in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true,
	"pass": true, "raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true,
}

// Result is what Load found: the group (as much as could be read), its
// errors and its warnings, each sorted by position.
type Result struct {
	Group    *Group
	Errors   []Diagnostic
	Warnings []Diagnostic
}

// OK reports whether the definition has no errors.
func (r *Result) OK() bool { return len(r.Errors) == 0 }

// Err returns the errors as one error, or nil.
func (r *Result) Err() error {
	if r.OK() {
		return nil
	}
	msgs := make([]string, len(r.Errors))
	for i, d := range r.Errors {
		msgs[i] = d.String()
	}
	return errors.New(strings.Join(msgs, "\n"))
}

// Load parses and checks a tool group definition. It never fails outright:
// every defect, malformed YAML included, is a diagnostic in the result.
// When the YAML does not parse, the group still has the name of its
// top-level name: line, if that line can be read on its own.
func Load(src []byte) *Result {
	res := &Result{Group: &Group{}}
	res.Errors, res.Warnings = read(src, func(r *reader, root *yaml.Node) { r.group(root, res.Group) },
		func() { res.Group.Name = topLevelString(src, "name") })
	return res
}

// read parses one YAML document (at most MaxSize bytes) and walks its root
// with walk, returning the sorted and capped diagnostics. When the
// document does not parse, it calls salvage, which reads what it can of
// the broken text (the name, so that the definition is still known by it).
func read(src []byte, walk func(r *reader, root *yaml.Node), salvage func()) (errs, warns []Diagnostic) {
	if len(src) > MaxSize {
		return []Diagnostic{{Pos: Pos{1, 1}, Message: fmt.Sprintf("the file is %d bytes, more than the %d a definition may have", len(src), MaxSize)}}, nil
	}
	doc, diag := parseYAML(src)
	if diag != nil {
		salvage()
		return []Diagnostic{*diag}, nil
	}
	r := &reader{}
	root := doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	walk(r, root)
	return capDiagnostics(r.errs, "errors"), capDiagnostics(r.warns, "warnings")
}

// MaxDiagnostics is how many errors (and, apart, warnings) Load reports at
// most; past it, one more diagnostic says how many were left out.
const MaxDiagnostics = 500

func capDiagnostics(ds []Diagnostic, what string) []Diagnostic {
	sortDiagnostics(ds)
	if len(ds) <= MaxDiagnostics {
		return ds
	}
	more := ds[MaxDiagnostics]
	more.Message = fmt.Sprintf("too many %s: %d more not shown", what, len(ds)-MaxDiagnostics)
	return append(ds[:MaxDiagnostics:MaxDiagnostics], more)
}

func (r *reader) group(n *yaml.Node, g *Group) {
	obj := r.object(n, "the definition", groupKeys, groupRequired)
	if obj == nil {
		return
	}
	r.kind(obj, "Plugin", "the definition")
	if e, ok := obj["name"]; ok {
		g.Name, _ = r.label(e, "name")
	}
	if e, ok := obj["description"]; ok {
		g.Description, _ = r.text(e, "description")
	}
	if e, ok := obj["dependencies"]; ok {
		r.dependencies(e, g)
	}
	if e, ok := obj["secrets"]; ok {
		r.secrets(e, g)
	}
	modules := moduleIndex(g.Dependencies)
	if e, ok := obj["tools"]; ok && !isNull(e.value) {
		items, _ := r.list(e, "tools")
		for _, it := range items {
			if t := r.tool(it, modules); t != nil {
				g.Tools = append(g.Tools, t)
			}
		}
	}
	if e, ok := obj["skills"]; ok && !isNull(e.value) {
		items, _ := r.list(e, "skills")
		for _, it := range items {
			if s := r.skill(it, modules); s != nil {
				g.Skills = append(g.Skills, s)
			}
		}
	}
	r.uniqueNames(g)
	r.checkPipelineRefs(g)
	if len(g.Tools) == 0 && len(g.Skills) == 0 && len(r.errs) == 0 {
		r.warnf(n, "the group declares no tools and no skills")
	}
}

// isNull reports whether a value is YAML null (an empty "tools:" key).
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func (r *reader) dependencies(e entry, g *Group) {
	if isNull(e.value) {
		return
	}
	items, _ := r.list(e, "dependencies")
	first := map[string]int{}
	for _, it := range items {
		p, ok := r.str(entry{value: it}, "a dependency")
		if !ok {
			continue
		}
		if err := relpath.Check(p); err != nil {
			r.errorf(it, "dependency %q: %v", p, err)
			continue
		}
		if line, dup := first[p]; dup {
			r.errorf(it, "dependency %q is listed twice (first at line %d)", p, line)
			continue
		}
		first[p] = it.Line
		g.Dependencies = append(g.Dependencies, Dependency{Path: p, Pos: posOf(it)})
	}
}

// secretNameRe is a secret's name (as storage.CheckSecretName has it).
var secretNameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// secrets reads the tenant secrets the group's code may read
// (toolhost.secret) and its HTTP tools' templates see (secrets.NAME).
func (r *reader) secrets(e entry, g *Group) {
	if isNull(e.value) {
		return
	}
	items, _ := r.list(e, "secrets")
	first := map[string]int{}
	for _, it := range items {
		name, ok := r.str(entry{value: it}, "a secret")
		if !ok {
			continue
		}
		if !secretNameRe.MatchString(name) {
			r.errorf(it, "secret %q: a secret's name is letters, digits and _ (not first a digit), at most 64", name)
			continue
		}
		if line, dup := first[name]; dup {
			r.errorf(it, "secret %q is listed twice (first at line %d)", name, line)
			continue
		}
		first[name] = it.Line
		g.Secrets = append(g.Secrets, Secret{Name: name, Pos: posOf(it)})
	}
}

// moduleIndex maps each module name (a .py file's name without .py) to the
// dependency paths that provide it.
func moduleIndex(deps []Dependency) map[string][]string {
	idx := map[string][]string{}
	for _, d := range deps {
		base := path.Base(d.Path)
		if strings.HasSuffix(base, ".py") && len(base) > 3 {
			mod := strings.TrimSuffix(base, ".py")
			idx[mod] = append(idx[mod], d.Path)
		}
	}
	return idx
}

func (r *reader) tool(n *yaml.Node, modules map[string][]string) *Tool {
	obj := r.object(n, "a tool", toolKeys, toolRequired)
	if obj == nil {
		return nil
	}
	t := &Tool{Pos: posOf(n)}
	r.kind(obj, "Tool", "a tool's")
	if e, ok := obj["object_name"]; ok {
		if s, ok := r.text(e, "object_name"); ok {
			t.ObjectName = s
			if !objectNameRe.MatchString(s) {
				r.errorf(e.value, "object_name %q must be 1 to 128 letters, digits, '_', '-' or '.'", s)
			} else if IsBuiltin(s) {
				r.errorf(e.value, "object_name %q is a built-in tool; choose another name", s)
			}
		}
	}
	if e, ok := obj["name"]; ok {
		if s, ok := r.text(e, "a tool's name"); ok {
			t.Name = s
			if !toolNameRe.MatchString(s) {
				r.errorf(e.value, "tool name %q is not accepted by model APIs: use 1 to 64 letters, digits, '_' or '-'", s)
			}
		}
	}
	if e, ok := obj["description"]; ok {
		t.Description, _ = r.text(e, "a tool's description")
	}
	// A tool runs an implementation, or is an HTTP tool (its http
	// section): one of the two.
	impl, hasImpl := obj["implementation"]
	hs, hasHTTP := obj["http"]
	switch {
	case hasImpl && hasHTTP:
		r.errorf(hs.key, "a tool has an implementation or an http section, not both")
	case hasImpl:
		t.Implementation = r.implementation(impl, modules)
		t.Implementation.Owner = "tool " + t.Name
	case hasHTTP:
		t.HTTP = r.http(hs)
	default:
		r.errorf(n, "a tool is missing the required key %q (or http, for an HTTP tool)", "implementation")
	}
	if _, ok := obj["parameters"]; !ok {
		r.errorf(n, "a tool is missing the required key %q", "parameters")
	}
	r.pipeline(obj, t)
	if e, ok := obj["parameters"]; ok {
		items, _ := r.list(e, "parameters (use [] for a tool without parameters)")
		seen := map[string]int{}
		for _, it := range items {
			if p := r.parameter(it); p != nil {
				r.once(seen, p.Name, p.Pos, "parameter", "tool "+strconv.Quote(t.Name))
				t.Parameters = append(t.Parameters, p)
			}
		}
	}
	return t
}

func (r *reader) parameter(n *yaml.Node) *Parameter {
	obj := r.object(n, "a parameter", paramKeys, paramRequired)
	if obj == nil {
		return nil
	}
	p := &Parameter{Pos: posOf(n)}
	if e, ok := obj["name"]; ok {
		p.Name = r.identifier(e, "parameter name")
		if p.Name != "" {
			p.Pos = posOf(e.value)
		}
	}
	if e, ok := obj["type"]; ok {
		p.Type = r.typeExpr(e, "type")
	}
	if e, ok := obj["description"]; ok {
		p.Description, _ = r.text(e, "a parameter's description")
	}
	if e, ok := obj["optional"]; ok {
		p.Optional, _ = r.boolean(e, "optional")
	}
	return p
}

func (r *reader) skill(n *yaml.Node, modules map[string][]string) *Skill {
	obj := r.object(n, "a skill", skillKeys, skillRequired)
	if obj == nil {
		return nil
	}
	s := &Skill{Pos: posOf(n)}
	r.kind(obj, "Skill", "a skill's")
	if e, ok := obj["name"]; ok {
		if v, ok := r.text(e, "a skill's name"); ok {
			s.Name = v
			if !objectNameRe.MatchString(v) {
				r.errorf(e.value, "skill name %q must be 1 to 128 letters, digits, '_', '-' or '.'", v)
			}
		}
	}
	if e, ok := obj["description"]; ok {
		s.Description, _ = r.text(e, "a skill's description")
	}
	if e, ok := obj["implementation"]; ok {
		s.Implementation = r.implementation(e, modules)
		s.Implementation.Owner = "skill " + s.Name
	}
	if e, ok := obj["session_init_call"]; ok {
		s.SessionInit, _ = r.boolean(e, "session_init_call")
	}
	if e, ok := obj["session_finish_call"]; ok {
		s.SessionFinish, _ = r.boolean(e, "session_finish_call")
	}
	if e, ok := obj["inputs"]; ok && !isNull(e.value) {
		items, _ := r.list(e, "inputs")
		seen := map[string]int{}
		for _, it := range items {
			if in := r.input(it); in != nil {
				r.once(seen, in.Name, in.Pos, "input", "skill "+strconv.Quote(s.Name))
				s.Inputs = append(s.Inputs, in)
			}
		}
	}
	if !s.SessionInit && !s.SessionFinish {
		r.warnf(n, "skill %q does not run on its own: set session_init_call or session_finish_call to true", s.Name)
	}
	return s
}

func (r *reader) input(n *yaml.Node) *Input {
	obj := r.object(n, "a skill input", inputKeys, inputRequired)
	if obj == nil {
		return nil
	}
	in := &Input{Pos: posOf(n)}
	if e, ok := obj["name"]; ok {
		in.Name = r.identifier(e, "input name")
		if in.Name != "" {
			in.Pos = posOf(e.value)
		}
	}
	if e, ok := obj["description"]; ok {
		in.Description, _ = r.text(e, "an input's description")
	}
	if e, ok := obj["dtype"]; ok {
		in.DType = r.typeExpr(e, "dtype")
	}
	return in
}

// once reports a name declared twice in one list; seen maps the names met
// so far to their lines.
func (r *reader) once(seen map[string]int, name string, p Pos, what, owner string) {
	if name == "" {
		return
	}
	if line, dup := seen[name]; dup {
		r.errorAt(p, "%s %q is declared twice in %s (first at line %d)", what, name, owner, line)
		return
	}
	seen[name] = p.Line
}

// identifier reads a name that becomes a Python keyword argument.
func (r *reader) identifier(e entry, what string) string {
	s, ok := r.text(e, what)
	if !ok {
		return ""
	}
	switch {
	case !identRe.MatchString(s):
		r.errorf(e.value, "%s %q must be a Python identifier of at most 64 ASCII letters, digits and '_', not starting with a digit", what, s)
		return ""
	case pythonKeywords[s]:
		r.errorf(e.value, "%s %q is a Python keyword", what, s)
		return ""
	}
	return s
}

// implementation reads "module.callable" and resolves the module to a
// listed .py dependency.
func (r *reader) implementation(e entry, modules map[string][]string) Implementation {
	s, ok := r.text(e, "implementation")
	if !ok {
		return Implementation{}
	}
	m := implRe.FindStringSubmatch(s)
	if m == nil {
		r.errorf(e.value, "implementation %q must be module.callable: the .py file's name without .py, a dot, and the function's name", s)
		return Implementation{}
	}
	impl := Implementation{Module: m[1], Callable: m[2]}
	for _, part := range m[1:] {
		if pythonKeywords[part] {
			r.errorf(e.value, "implementation %q uses the Python keyword %q as a name", s, part)
			return impl
		}
	}
	files := modules[impl.Module]
	switch len(files) {
	case 0:
		known := make([]string, 0, len(modules))
		for mod := range modules {
			known = append(known, mod)
		}
		sort.Strings(known)
		hint := " (no .py files are listed)"
		if len(known) > 0 {
			hint = suggest.DidYouMean(impl.Module, known) + "; listed modules: " + strings.Join(known, ", ")
		}
		r.errorf(e.value, "implementation %q: module %q is not a listed .py dependency; add %s.py under dependencies%s", s, impl.Module, impl.Module, hint)
	case 1:
		impl.File = files[0]
	default:
		r.errorf(e.value, "implementation %q: module %q is ambiguous: it is provided by %s", s, impl.Module, strings.Join(files, " and "))
	}
	return impl
}

// typeExpr reads and parses a type expression, pointing errors at the
// column inside the expression.
func (r *reader) typeExpr(e entry, what string) *typeexpr.Type {
	n := r.resolve(e.value)
	if n == nil {
		return nil
	}
	src := n.Value
	// "type: null" is YAML null, and the spec's null type.
	if !(n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" && strings.EqualFold(n.Value, "null")) {
		var ok bool
		if src, ok = r.str(entry{value: n}, what); !ok {
			return nil
		}
	}
	t, err := typeexpr.Parse(src)
	if err != nil {
		var te *typeexpr.Error
		if errors.As(err, &te) {
			r.errorAt(exprPos(n, te.Column), "%s %q: %s", what, src, te.Msg)
		} else {
			r.errorf(n, "%s %q: %v", what, src, err)
		}
		return nil
	}
	return t
}

// exprPos maps a column inside a scalar's value to a file position. It is
// exact for plain and single-line quoted scalars without escapes; for block
// scalars it points at the scalar itself.
func exprPos(n *yaml.Node, col int) Pos {
	switch n.Style {
	case 0:
		return Pos{n.Line, n.Column + col - 1}
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		return Pos{n.Line, n.Column + col}
	}
	return posOf(n)
}

// uniqueNames reports repeated object_names, tool names and skill names,
// and skill names that are also a tool's object_name.
func (r *reader) uniqueNames(g *Group) {
	objects, names, skills := map[string]Pos{}, map[string]Pos{}, map[string]Pos{}
	for _, t := range g.Tools {
		if t.ObjectName != "" {
			if p, dup := objects[t.ObjectName]; dup {
				r.errorAt(t.Pos, "object_name %q is used by two tools (first at line %d)", t.ObjectName, p.Line)
			} else {
				objects[t.ObjectName] = t.Pos
			}
		}
		if t.Name != "" {
			if p, dup := names[t.Name]; dup {
				r.errorAt(t.Pos, "tool name %q is used by two tools (first at line %d)", t.Name, p.Line)
			} else {
				names[t.Name] = t.Pos
			}
		}
	}
	for _, s := range g.Skills {
		if s.Name == "" {
			continue
		}
		if p, dup := skills[s.Name]; dup {
			r.errorAt(s.Pos, "skill name %q is used by two skills (first at line %d)", s.Name, p.Line)
			continue
		}
		skills[s.Name] = s.Pos
		if p, clash := objects[s.Name]; clash {
			r.errorAt(s.Pos, "skill name %q is also the object_name of the tool at line %d; available_tools could not tell them apart", s.Name, p.Line)
		}
	}
}

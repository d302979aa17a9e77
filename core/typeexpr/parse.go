package typeexpr

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"toolhost/core/suggest"
)

// MaxLen is the longest type expression Parse accepts, in bytes.
const MaxLen = 4096

// maxDepth bounds the nesting of brackets, so that hostile input cannot
// exhaust the stack.
const maxDepth = 32

// Error is a defect in a type expression.
type Error struct {
	// Offset is the byte offset of the defect in the expression.
	Offset int
	// Column is the 1-based column of the defect, counted in characters.
	Column int
	// Msg says what is wrong.
	Msg string
}

// Error implements error.
func (e *Error) Error() string { return fmt.Sprintf("column %d: %s", e.Column, e.Msg) }

func errAt(src string, off int, msg string) *Error {
	if off > len(src) {
		off = len(src)
	}
	return &Error{Offset: off, Column: utf8.RuneCountInString(src[:off]) + 1, Msg: msg}
}

// simple maps the names of the types that take no arguments to their kind.
var simple = map[string]Kind{
	"str": String, "string": String,
	"int": Integer, "integer": Integer,
	"float": Number, "number": Number,
	"bool": Boolean, "boolean": Boolean,
	"None": Null, "null": Null, "NoneType": Null,
	"datetime.date": Date, "datetime.datetime": DateTime, "datetime.time": Time,
}

// generic names the types that may take arguments in brackets.
var generic = map[string]string{
	"list": "list", "List": "list", "typing.List": "list", "array": "list",
	"dict": "dict", "Dict": "dict", "typing.Dict": "dict", "object": "dict",
	"Literal": "Literal", "typing.Literal": "Literal",
	"Optional": "Optional", "typing.Optional": "Optional",
	"Union": "Union", "typing.Union": "Union",
}

// knownNames lists every name the parser knows, for did-you-mean.
var knownNames = func() []string {
	var names []string
	for n := range simple {
		names = append(names, n)
	}
	for n := range generic {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}()

// Parse parses a type expression. The error, if any, is an *Error that
// points at the offending column.
func Parse(src string) (*Type, error) {
	t, err := parse(src)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func parse(src string) (*Type, *Error) {
	if len(src) > MaxLen {
		return nil, errAt(src, MaxLen, fmt.Sprintf("type expression longer than %d bytes", MaxLen))
	}
	if strings.TrimSpace(src) == "" {
		return nil, errAt(src, 0, "empty type expression")
	}
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks}
	t, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if tok := p.peek(); tok.kind != tEOF {
		return nil, p.errTok(tok, "unexpected "+tok.describe()+" after a complete type")
	}
	return t, nil
}

type parser struct {
	src  string
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) errTok(t token, msg string) *Error { return errAt(p.src, t.pos, msg) }

// expr = term { "|" term } .
func (p *parser) expr(depth int) (*Type, *Error) {
	first, err := p.term(depth)
	if err != nil {
		return nil, err
	}
	opts := []*Type{first}
	for p.peek().kind == tPipe {
		p.next()
		t, err := p.term(depth)
		if err != nil {
			return nil, err
		}
		opts = append(opts, t)
	}
	return unionOf(first.Pos, opts), nil
}

// unionOf flattens nested unions and drops repeated options; one option left
// is returned as it is.
func unionOf(pos int, opts []*Type) *Type {
	var flat []*Type
	seen := map[string]bool{}
	var add func(t *Type)
	add = func(t *Type) {
		if t.Kind == Union {
			for _, o := range t.Options {
				add(o)
			}
			return
		}
		key := t.String()
		if !seen[key] {
			seen[key] = true
			flat = append(flat, t)
		}
	}
	for _, o := range opts {
		add(o)
	}
	if len(flat) == 1 {
		return flat[0]
	}
	return &Type{Kind: Union, Pos: pos, Options: flat}
}

// term = dotted [ "[" args "]" ] .
func (p *parser) term(depth int) (*Type, *Error) {
	if depth > maxDepth {
		return nil, p.errTok(p.peek(), fmt.Sprintf("type expression nested more than %d deep", maxDepth))
	}
	tok := p.peek()
	switch tok.kind {
	case tIdent:
	case tString, tNumber, tMinus:
		return nil, p.errTok(tok, "a value like "+tok.text+" is only allowed inside Literal[...]")
	case tEOF:
		return nil, p.errTok(tok, "expected a type, got end of expression")
	default:
		return nil, p.errTok(tok, "expected a type, got "+tok.describe())
	}
	name, err := p.dotted()
	if err != nil {
		return nil, err
	}
	pos := tok.pos
	if k, ok := simple[name]; ok {
		if p.peek().kind == tLBrack {
			return nil, p.errTok(p.peek(), name+" takes no type arguments")
		}
		return &Type{Kind: k, Pos: pos}, nil
	}
	g, ok := generic[name]
	if !ok {
		msg := "unknown type " + strconv.Quote(name)
		switch name {
		case "True", "False":
			msg = name + " is only allowed inside Literal[...]"
		default:
			msg += suggest.DidYouMean(name, knownNames)
		}
		return nil, errAt(p.src, pos, msg)
	}
	if p.peek().kind != tLBrack {
		switch g {
		case "list":
			return &Type{Kind: Array, Pos: pos}, nil
		case "dict":
			return &Type{Kind: Object, Pos: pos}, nil
		}
		return nil, p.errTok(p.peek(), name+" needs arguments in brackets, for example "+example(g))
	}
	if name == "array" || name == "object" {
		return nil, p.errTok(p.peek(), fmt.Sprintf("%s takes no type arguments; write %s[...] for a typed %s", name, g, name))
	}
	open := p.next()
	switch g {
	case "Literal":
		return p.literal(pos, open)
	}
	args, err := p.typeArgs(depth, open)
	if err != nil {
		return nil, err
	}
	switch g {
	case "list":
		if len(args) != 1 {
			return nil, p.errTok(open, fmt.Sprintf("%s takes one type argument, got %d", name, len(args)))
		}
		return &Type{Kind: Array, Pos: pos, Elem: args[0]}, nil
	case "dict":
		if len(args) != 2 {
			return nil, p.errTok(open, fmt.Sprintf("%s takes two type arguments (key, value), got %d", name, len(args)))
		}
		if !stringKey(args[0]) {
			return nil, errAt(p.src, args[0].Pos, "dict keys must be str (or a Literal of strings): JSON object keys are strings, got "+args[0].String())
		}
		return &Type{Kind: Object, Pos: pos, Key: args[0], Value: args[1]}, nil
	case "Optional":
		if len(args) != 1 {
			return nil, p.errTok(open, fmt.Sprintf("%s takes one type argument, got %d", name, len(args)))
		}
		return unionOf(pos, []*Type{args[0], {Kind: Null, Pos: pos}}), nil
	default: // Union
		return unionOf(pos, args), nil
	}
}

func example(g string) string {
	switch g {
	case "Literal":
		return `Literal["a", "b"]`
	case "Optional":
		return "Optional[str]"
	}
	return "Union[str, int]"
}

func stringKey(t *Type) bool {
	if t.Kind == String {
		return true
	}
	if t.Kind != Literal {
		return false
	}
	for _, v := range t.Values {
		if v.Kind != StrValue {
			return false
		}
	}
	return true
}

// dotted = ident { "." ident } .
func (p *parser) dotted() (string, *Error) {
	name := p.next().text
	for p.peek().kind == tDot {
		p.next()
		t := p.peek()
		if t.kind != tIdent {
			return "", p.errTok(t, "expected a name after \".\", got "+t.describe())
		}
		name += "." + p.next().text
	}
	return name, nil
}

// typeArgs parses "T1, T2, ... ]" after an opening bracket.
func (p *parser) typeArgs(depth int, open token) ([]*Type, *Error) {
	var args []*Type
	for {
		if p.peek().kind == tRBrack {
			if len(args) == 0 {
				return nil, p.errTok(p.peek(), "expected a type argument, got \"]\"")
			}
			p.next()
			return args, nil
		}
		t, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		args = append(args, t)
		switch tok := p.peek(); tok.kind {
		case tComma:
			p.next()
		case tRBrack:
		case tEOF:
			return nil, p.errTok(open, "unclosed \"[\"")
		default:
			return nil, p.errTok(tok, "expected \",\" or \"]\", got "+tok.describe())
		}
	}
}

// literal parses "v1, v2, ... ]" after Literal[.
func (p *parser) literal(pos int, open token) (*Type, *Error) {
	t := &Type{Kind: Literal, Pos: pos}
	for {
		tok := p.peek()
		if tok.kind == tRBrack {
			if len(t.Values) == 0 {
				return nil, p.errTok(tok, "Literal needs at least one value")
			}
			p.next()
			return t, nil
		}
		if tok.kind == tEOF {
			return nil, p.errTok(open, "unclosed \"[\"")
		}
		v, err := p.literalValue()
		if err != nil {
			return nil, err
		}
		if !hasValue(t.Values, v) {
			t.Values = append(t.Values, v)
		}
		switch tok := p.peek(); tok.kind {
		case tComma:
			p.next()
		case tRBrack:
		case tEOF:
			return nil, p.errTok(open, "unclosed \"[\"")
		default:
			return nil, p.errTok(tok, "expected \",\" or \"]\", got "+tok.describe())
		}
	}
}

func (p *parser) literalValue() (Value, *Error) {
	tok := p.next()
	switch tok.kind {
	case tString:
		return Value{Kind: StrValue, Str: tok.text}, nil
	case tMinus:
		num := p.peek()
		if num.kind != tNumber {
			return Value{}, p.errTok(num, "expected a number after \"-\", got "+num.describe())
		}
		p.next()
		return p.number(num, true)
	case tNumber:
		return p.number(tok, false)
	case tIdent:
		switch tok.text {
		case "True", "False":
			return Value{Kind: BoolValue, Bool: tok.text == "True"}, nil
		case "None":
			return Value{Kind: NoneValue}, nil
		}
		return Value{}, p.errTok(tok, "Literal values must be strings, numbers, True, False or None, got "+tok.describe()+
			suggest.DidYouMean(tok.text, []string{"True", "False", "None"}))
	}
	return Value{}, p.errTok(tok, "expected a Literal value, got "+tok.describe())
}

func (p *parser) number(tok token, neg bool) (Value, *Error) {
	text := tok.text
	if strings.Contains(text, "__") || strings.HasPrefix(text, "_") || strings.HasSuffix(text, "_") {
		return Value{}, p.errTok(tok, "malformed number "+text)
	}
	clean := strings.ReplaceAll(text, "_", "")
	if neg {
		clean = "-" + clean
	}
	if !strings.ContainsAny(clean, ".eE") {
		if len(clean) > 1 && strings.TrimLeft(clean, "-")[0] == '0' && strings.Trim(clean, "-0") != "" {
			return Value{}, p.errTok(tok, "leading zeros are not allowed in "+text)
		}
		n, err := strconv.ParseInt(clean, 10, 64)
		if err != nil {
			return Value{}, p.errTok(tok, "integer "+text+" is out of range (64 bits)")
		}
		return Value{Kind: IntValue, Int: n}, nil
	}
	f, err := strconv.ParseFloat(clean, 64)
	if err != nil || math.IsInf(f, 0) {
		return Value{}, p.errTok(tok, "malformed number "+text)
	}
	return Value{Kind: FloatValue, Float: f}, nil
}

// hasValue reports whether vs holds a value equal to v as JSON sees it: 1
// and 1.0 are the same value, true and 1 are not.
func hasValue(vs []Value, v Value) bool {
	for _, w := range vs {
		if ValuesEqual(w, v) {
			return true
		}
	}
	return false
}

// ValuesEqual reports whether two literal values are equal as JSON values
// (JSON Schema's enum equality): numbers compare by value, whatever their
// kind.
func ValuesEqual(a, b Value) bool {
	if a.Kind == IntValue && b.Kind == IntValue {
		return a.Int == b.Int
	}
	an, aNum := a.number()
	bn, bNum := b.number()
	if aNum || bNum {
		return aNum && bNum && an == bn
	}
	return a == b
}

func (v Value) number() (float64, bool) {
	switch v.Kind {
	case IntValue:
		return float64(v.Int), true
	case FloatValue:
		return v.Float, true
	}
	return 0, false
}

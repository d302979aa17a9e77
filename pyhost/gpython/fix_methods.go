package gpython

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"

	"github.com/go-python/gpython/py"
)

var (
	upperCaser = cases.Upper(language.Und)
	lowerCaser = cases.Lower(language.Und)
	titleCaser = cases.Title(language.Und, cases.NoLower)
	foldCaser  = cases.Fold()
)

func str(self py.Object) string { return string(self.(py.String)) }

// strMethod registers a str method on (self string, args).
func strMethod(name string, fn func(s string, args py.Tuple, kwargs py.StringDict) (py.Object, error)) {
	method(py.StringType, name, func(self py.Object, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
		return fn(str(self), args, kwargs)
	})
}

// strMap registers a str method that maps the string.
func strMap(name string, fn func(string) string) {
	strMethod(name, func(s string, args py.Tuple, _ py.StringDict) (py.Object, error) {
		if len(args) > 0 {
			return nil, py.ExceptionNewf(py.TypeError, "%s() takes no arguments (%d given)", name, len(args))
		}
		return py.String(fn(s)), nil
	})
}

func cased(r rune) bool { return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) }

func optString(args py.Tuple, i int, name string) (string, bool, error) {
	if len(args) <= i || args[i] == py.None {
		return "", false, nil
	}
	s, ok := args[i].(py.String)
	if !ok {
		return "", false, py.ExceptionNewf(py.TypeError, "%s: must be str or None, not %s", name, args[i].Type().Name)
	}
	return string(s), true, nil
}

// span reads the optional start and end of find/count/index as rune
// offsets of s, clamped as slices are.
func span(runes []rune, args py.Tuple, from int) (int, int, error) {
	n := len(runes)
	start, end := 0, n
	get := func(i int, def int) (int, error) {
		if len(args) <= i || args[i] == py.None {
			return def, nil
		}
		v, err := intArg(args[i])
		if err != nil {
			return 0, err
		}
		x := int(v)
		if x < 0 {
			x += n
			if x < 0 {
				x = 0
			}
		}
		if x > n {
			x = n
		}
		return x, nil
	}
	var err error
	if start, err = get(from, 0); err != nil {
		return 0, 0, err
	}
	if end, err = get(from+1, n); err != nil {
		return 0, 0, err
	}
	return start, end, nil
}

// search finds sub in s[start:end] (from the right when last), in runes.
func search(s string, args py.Tuple, last bool) (int, error) {
	if len(args) < 1 {
		return 0, py.ExceptionNewf(py.TypeError, "expected at least 1 argument, got 0")
	}
	sub, ok := args[0].(py.String)
	if !ok {
		return 0, py.ExceptionNewf(py.TypeError, "must be str, not %s", args[0].Type().Name)
	}
	runes := []rune(s)
	start, end, err := span(runes, args, 1)
	if err != nil {
		return 0, err
	}
	if start > end {
		return -1, nil
	}
	hay := string(runes[start:end])
	var i int
	if last {
		i = strings.LastIndex(hay, string(sub))
	} else {
		i = strings.Index(hay, string(sub))
	}
	if i < 0 {
		return -1, nil
	}
	return start + utf8.RuneCountInString(hay[:i]), nil
}

// splitWhite splits on runs of whitespace, at most max times (from the
// right when right).
func splitWhite(s string, max int, right bool) []string {
	fields := strings.FieldsFunc(s, isSpace)
	if max < 0 || len(fields) <= 1 {
		return fields
	}
	if max > len(fields)-1 {
		max = len(fields) - 1
	}
	// Split max times, keeping the rest (with its inner spacing) whole.
	if !right {
		var out []string
		rest := strings.TrimLeftFunc(s, isSpace)
		for i := 0; i < max; i++ {
			j := strings.IndexFunc(rest, isSpace)
			out = append(out, rest[:j])
			rest = strings.TrimLeftFunc(rest[j:], isSpace)
		}
		return append(out, rest)
	}
	var out []string
	rest := strings.TrimRightFunc(s, isSpace)
	for i := 0; i < max; i++ {
		j := strings.LastIndexFunc(rest, isSpace)
		_, size := utf8.DecodeRuneInString(rest[j:])
		out = append([]string{rest[j+size:]}, out...)
		rest = strings.TrimRightFunc(rest[:j], isSpace)
	}
	return append([]string{rest}, out...)
}

func isSpace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f }

func strList(items []string) *py.List { return py.NewListFromStrings(items) }

func registerStrFixes() {
	strMap("upper", upperCaser.String)
	strMap("lower", lowerCaser.String)
	strMap("casefold", foldCaser.String)
	strMap("swapcase", func(s string) string {
		var b strings.Builder
		for _, r := range s {
			switch {
			case unicode.IsUpper(r):
				b.WriteString(lowerCaser.String(string(r)))
			case unicode.IsLower(r):
				b.WriteString(upperCaser.String(string(r)))
			default:
				b.WriteRune(r)
			}
		}
		return b.String()
	})
	strMap("title", func(s string) string {
		var b strings.Builder
		prev := false
		for _, r := range s {
			if prev {
				b.WriteString(lowerCaser.String(string(r)))
			} else {
				b.WriteString(titleCaser.String(string(r)))
			}
			prev = cased(r)
		}
		return b.String()
	})
	strMap("capitalize", func(s string) string {
		r, size := utf8.DecodeRuneInString(s)
		if size == 0 {
			return s
		}
		return titleCaser.String(string(r)) + lowerCaser.String(s[size:])
	})
	for name, ok := range map[string]func(rune) bool{
		"isdigit":     func(r rune) bool { return unicode.IsDigit(r) || digitLike(r) },
		"isdecimal":   unicode.IsDigit,
		"isnumeric":   unicode.IsNumber,
		"isalpha":     unicode.IsLetter,
		"isalnum":     func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) },
		"isspace":     isSpace,
		"isprintable": unicode.IsPrint,
	} {
		ok := ok
		strMethod(name, func(s string, _ py.Tuple, _ py.StringDict) (py.Object, error) {
			if s == "" {
				return py.NewBool(name == "isprintable"), nil
			}
			for _, r := range s {
				if !ok(r) {
					return py.False, nil
				}
			}
			return py.True, nil
		})
	}
	caseTest := func(name string, want func(rune) bool, refuse func(rune) bool) {
		strMethod(name, func(s string, _ py.Tuple, _ py.StringDict) (py.Object, error) {
			found := false
			for _, r := range s {
				if refuse(r) {
					return py.False, nil
				}
				if want(r) {
					found = true
				}
			}
			return py.NewBool(found), nil
		})
	}
	caseTest("isupper", unicode.IsUpper, func(r rune) bool { return unicode.IsLower(r) || unicode.IsTitle(r) })
	caseTest("islower", unicode.IsLower, func(r rune) bool { return unicode.IsUpper(r) || unicode.IsTitle(r) })
	strMethod("istitle", func(s string, _ py.Tuple, _ py.StringDict) (py.Object, error) {
		prev, found := false, false
		for _, r := range s {
			switch {
			case unicode.IsUpper(r) || unicode.IsTitle(r):
				if prev {
					return py.False, nil
				}
				prev, found = true, true
			case unicode.IsLower(r):
				if !prev {
					return py.False, nil
				}
				prev = true
			default:
				prev = false
			}
		}
		return py.NewBool(found), nil
	})
	strMethod("join", func(s string, args py.Tuple, _ py.StringDict) (py.Object, error) {
		if len(args) != 1 {
			return nil, py.ExceptionNewf(py.TypeError, "join() takes exactly one argument (%d given)", len(args))
		}
		var parts []string
		var ierr error
		err := py.Iterate(inOrder(args[0]), func(o py.Object) bool {
			p, ok := o.(py.String)
			if !ok {
				ierr = py.ExceptionNewf(py.TypeError, "sequence item %d: expected str instance, %s found", len(parts), o.Type().Name)
				return true
			}
			parts = append(parts, string(p))
			return false
		})
		if err != nil {
			return nil, err
		}
		if ierr != nil {
			return nil, ierr
		}
		return py.String(strings.Join(parts, s)), nil
	})
	strMethod("format", func(s string, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
		return strFormat(py.String(s), args, kwargs)
	})
	for _, name := range []string{"find", "rfind", "index", "rindex"} {
		name := name
		strMethod(name, func(s string, args py.Tuple, _ py.StringDict) (py.Object, error) {
			i, err := search(s, args, name[0] == 'r')
			if err != nil {
				return nil, err
			}
			if i < 0 && strings.HasSuffix(name, "index") {
				return nil, py.ExceptionNewf(py.ValueError, "substring not found")
			}
			return py.Int(i), nil
		})
	}
	strMethod("count", func(s string, args py.Tuple, _ py.StringDict) (py.Object, error) {
		if len(args) < 1 {
			return nil, py.ExceptionNewf(py.TypeError, "count() takes at least 1 argument (0 given)")
		}
		sub, ok := args[0].(py.String)
		if !ok {
			return nil, py.ExceptionNewf(py.TypeError, "must be str, not %s", args[0].Type().Name)
		}
		runes := []rune(s)
		start, end, err := span(runes, args, 1)
		if err != nil {
			return nil, err
		}
		if start > end {
			return py.Int(0), nil
		}
		hay := string(runes[start:end])
		if sub == "" {
			return py.Int(utf8.RuneCountInString(hay) + 1), nil
		}
		return py.Int(strings.Count(hay, string(sub))), nil
	})
	// split: gpython's gave [] for a negative maxsplit and did not split
	// at the separators \x1c-\x1f.
	strMethod("split", func(s string, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
		var sepO, maxO py.Object = py.None, py.Int(-1)
		if err := py.ParseTupleAndKeywords(args, kwargs, "|OO:split", []string{"sep", "maxsplit"}, &sepO, &maxO); err != nil {
			return nil, err
		}
		max, err := intArg(maxO)
		if err != nil {
			return nil, err
		}
		sep, has, err := optString(py.Tuple{sepO}, 0, "split")
		if err != nil {
			return nil, err
		}
		if !has {
			return strList(splitWhite(s, int(max), false)), nil
		}
		if sep == "" {
			return nil, py.ExceptionNewf(py.ValueError, "empty separator")
		}
		if max < 0 {
			return strList(strings.Split(s, sep)), nil
		}
		return strList(strings.SplitN(s, sep, int(max)+1)), nil
	})
	strMethod("removeprefix", func(s string, args py.Tuple, _ py.StringDict) (py.Object, error) {
		p, _, err := optString(args, 0, "removeprefix")
		if err != nil || len(args) != 1 {
			return nil, py.ExceptionNewf(py.TypeError, "removeprefix() takes exactly one argument (%d given)", len(args))
		}
		return py.String(strings.TrimPrefix(s, p)), nil
	})
	strMethod("removesuffix", func(s string, args py.Tuple, _ py.StringDict) (py.Object, error) {
		p, _, err := optString(args, 0, "removesuffix")
		if err != nil || len(args) != 1 {
			return nil, py.ExceptionNewf(py.TypeError, "removesuffix() takes exactly one argument (%d given)", len(args))
		}
		return py.String(strings.TrimSuffix(s, p)), nil
	})
	strMethod("format_map", func(s string, args py.Tuple, _ py.StringDict) (py.Object, error) {
		if len(args) != 1 {
			return nil, py.ExceptionNewf(py.TypeError, "format_map() takes exactly one argument (%d given)", len(args))
		}
		d, ok := args[0].(py.StringDict)
		if !ok {
			return nil, unsupported("format_map with a mapping of type " + args[0].Type().Name)
		}
		auto := 0
		out, err := formatString(s, nil, d, &auto, 2)
		if err != nil {
			return nil, err
		}
		return py.String(out), nil
	})
	strMethod("isidentifier", func(s string, _ py.Tuple, _ py.StringDict) (py.Object, error) {
		ok := s != ""
		for i, r := range s {
			if !(r == '_' || unicode.IsLetter(r) || i > 0 && (unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Pc, r))) {
				ok = false
			}
		}
		return py.NewBool(ok), nil
	})
	strMethod("isprintable", func(s string, _ py.Tuple, _ py.StringDict) (py.Object, error) {
		for _, r := range s {
			if r != ' ' && !unicode.IsPrint(r) {
				return py.False, nil
			}
		}
		return py.True, nil
	})
	strMethod("rsplit", func(s string, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
		var sepO, maxO py.Object = py.None, py.Int(-1)
		if err := py.ParseTupleAndKeywords(args, kwargs, "|OO:rsplit", []string{"sep", "maxsplit"}, &sepO, &maxO); err != nil {
			return nil, err
		}
		max, err := intArg(maxO)
		if err != nil {
			return nil, err
		}
		sep, has, err := optString(py.Tuple{sepO}, 0, "rsplit")
		if err != nil {
			return nil, err
		}
		if !has {
			return strList(splitWhite(s, int(max), true)), nil
		}
		if sep == "" {
			return nil, py.ExceptionNewf(py.ValueError, "empty separator")
		}
		if max < 0 {
			return strList(strings.Split(s, sep)), nil
		}
		var out []string
		rest := s
		for i := int64(0); i < max; i++ {
			j := strings.LastIndex(rest, sep)
			if j < 0 {
				break
			}
			out = append([]string{rest[j+len(sep):]}, out...)
			rest = rest[:j]
		}
		return strList(append([]string{rest}, out...)), nil
	})
	strMethod("splitlines", func(s string, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
		var keepO py.Object = py.False
		if err := py.ParseTupleAndKeywords(args, kwargs, "|O:splitlines", []string{"keepends"}, &keepO); err != nil {
			return nil, err
		}
		keep, err := truth(keepO)
		if err != nil {
			return nil, err
		}
		var out []string
		start := 0
		for i := 0; i < len(s); {
			r, size := utf8.DecodeRuneInString(s[i:])
			switch r {
			case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
				end := i + size
				if r == '\r' && end < len(s) && s[end] == '\n' {
					end++
				}
				if keep {
					out = append(out, s[start:end])
				} else {
					out = append(out, s[start:i])
				}
				start, i = end, end
				continue
			}
			i += size
		}
		if start < len(s) {
			out = append(out, s[start:])
		}
		return strList(out), nil
	})
	part := func(name string, last bool) {
		strMethod(name, func(s string, args py.Tuple, _ py.StringDict) (py.Object, error) {
			if len(args) != 1 {
				return nil, py.ExceptionNewf(py.TypeError, "%s() takes exactly one argument (%d given)", name, len(args))
			}
			sep, ok := args[0].(py.String)
			if !ok {
				return nil, py.ExceptionNewf(py.TypeError, "must be str, not %s", args[0].Type().Name)
			}
			if sep == "" {
				return nil, py.ExceptionNewf(py.ValueError, "empty separator")
			}
			var i int
			if last {
				i = strings.LastIndex(s, string(sep))
			} else {
				i = strings.Index(s, string(sep))
			}
			if i < 0 {
				if last {
					return py.Tuple{py.String(""), py.String(""), py.String(s)}, nil
				}
				return py.Tuple{py.String(s), py.String(""), py.String("")}, nil
			}
			return py.Tuple{py.String(s[:i]), sep, py.String(s[i+len(sep):])}, nil
		})
	}
	part("partition", false)
	part("rpartition", true)
	just := func(name string) {
		strMethod(name, func(s string, args py.Tuple, _ py.StringDict) (py.Object, error) {
			if len(args) < 1 || len(args) > 2 {
				return nil, py.ExceptionNewf(py.TypeError, "%s() takes 1 or 2 arguments (%d given)", name, len(args))
			}
			w, err := intArg(args[0])
			if err != nil {
				return nil, err
			}
			fill := " "
			if len(args) == 2 {
				f, ok := args[1].(py.String)
				if !ok || utf8.RuneCountInString(string(f)) != 1 {
					return nil, py.ExceptionNewf(py.TypeError, "The fill character must be exactly one character long")
				}
				fill = string(f)
			}
			n := utf8.RuneCountInString(s)
			if int(w) <= n {
				return py.String(s), nil
			}
			padN := int(w) - n
			switch name {
			case "ljust":
				return py.String(s + strings.Repeat(fill, padN)), nil
			case "rjust":
				return py.String(strings.Repeat(fill, padN) + s), nil
			}
			left := padN/2 + (padN & int(w) & 1)
			return py.String(strings.Repeat(fill, left) + s + strings.Repeat(fill, padN-left)), nil
		})
	}
	just("ljust")
	just("rjust")
	just("center")
	strMethod("zfill", func(s string, args py.Tuple, _ py.StringDict) (py.Object, error) {
		if len(args) != 1 {
			return nil, py.ExceptionNewf(py.TypeError, "zfill() takes exactly one argument (%d given)", len(args))
		}
		w, err := intArg(args[0])
		if err != nil {
			return nil, err
		}
		n := utf8.RuneCountInString(s)
		if int(w) <= n {
			return py.String(s), nil
		}
		zeros := strings.Repeat("0", int(w)-n)
		if s != "" && (s[0] == '+' || s[0] == '-') {
			return py.String(s[:1] + zeros + s[1:]), nil
		}
		return py.String(zeros + s), nil
	})
	strMethod("expandtabs", func(s string, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
		var sizeO py.Object = py.Int(8)
		if err := py.ParseTupleAndKeywords(args, kwargs, "|O:expandtabs", []string{"tabsize"}, &sizeO); err != nil {
			return nil, err
		}
		size, err := intArg(sizeO)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		col := 0
		for _, r := range s {
			switch r {
			case '\t':
				if size > 0 {
					n := int(size) - col%int(size)
					b.WriteString(strings.Repeat(" ", n))
					col += n
				}
			case '\n', '\r':
				b.WriteRune(r)
				col = 0
			default:
				b.WriteRune(r)
				col++
			}
		}
		return py.String(b.String()), nil
	})
	strMethod("encode", func(s string, args py.Tuple, kwargs py.StringDict) (py.Object, error) {
		var encO, errO py.Object = py.String("utf-8"), py.String("strict")
		if err := py.ParseTupleAndKeywords(args, kwargs, "|OO:encode", []string{"encoding", "errors"}, &encO, &errO); err != nil {
			return nil, err
		}
		enc, _ := encO.(py.String)
		switch strings.ReplaceAll(strings.ToLower(string(enc)), "_", "-") {
		case "utf-8", "utf8":
			return py.Bytes(s), nil
		case "ascii":
			for i, r := range s {
				if r >= 0x80 {
					return nil, py.ExceptionNewf(py.UnicodeEncodeError, "'ascii' codec can't encode character %s in position %d: ordinal not in range(128)", strRepr(string(r), true), i)
				}
			}
			return py.Bytes(s), nil
		}
		return nil, py.ExceptionNewf(py.LookupError, "unknown encoding on the gpython runtime: %s (it has utf-8 and ascii; use the cpython runtime)", string(enc))
	})
}

// digitLike reports superscript and other digits CPython's isdigit takes.
func digitLike(r rune) bool {
	return r == '²' || r == '³' || r == '¹' || r >= 0x2070 && r <= 0x2079 || r >= 0x2080 && r <= 0x2089 || r >= 0x2460 && r <= 0x2468
}

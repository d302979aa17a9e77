package worker

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// decodeAnswer decodes a frame from the worker as json.Unmarshal would.
// A call's answer as runner.py writes it (the keys result, ok,
// duration_us, output, output_truncated and id, each once; strings
// without escapes) is read by a scanner over the bytes, without
// encoding/json's reflection; anything else, and anything the scanner is
// unsure of, goes to json.Unmarshal, so that the result is the same.
func decodeAnswer(body []byte, a *Answer) error {
	if fastAnswer(body, a) {
		return nil
	}
	*a = Answer{}
	return json.Unmarshal(body, a)
}

// The keys fastAnswer reads, as bits of the set of those seen.
const (
	keyID = 1 << iota
	keyOK
	keyResult
	keyOutput
	keyTruncated
	keyDuration
)

func fastAnswer(b []byte, a *Answer) bool {
	i := space(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	var seen int
	for i++; ; {
		i = space(b, i)
		key, j, ok := plainString(b, i)
		if !ok {
			return false
		}
		if i = space(b, j); i >= len(b) || b[i] != ':' {
			return false
		}
		i = space(b, i+1)
		var bit int
		switch string(key) {
		case "id":
			bit = keyID
			var s []byte
			if s, j, ok = plainString(b, i); ok {
				a.ID = string(s)
			}
		case "output":
			bit = keyOutput
			var s []byte
			if s, j, ok = plainString(b, i); ok {
				a.Output = string(s)
			}
		case "ok":
			bit = keyOK
			a.OK, j, ok = boolean(b, i)
		case "output_truncated":
			bit = keyTruncated
			a.OutputTruncated, j, ok = boolean(b, i)
		case "duration_us":
			bit = keyDuration
			a.DurationUs, j, ok = integer(b, i)
		case "result":
			bit = keyResult
			if j, ok = skipValue(b, i); ok && json.Valid(b[i:j]) {
				a.Result = json.RawMessage(b[i:j])
			} else {
				ok = false
			}
		default:
			return false
		}
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		if i = space(b, j); i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i++
			continue
		case '}':
			return space(b, i+1) == len(b)
		}
		return false
	}
}

// space skips JSON white space from i.
func space(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// plainString reads a string at i that has no escape and no control
// character, and is valid UTF-8: its bytes, and where it ends.
func plainString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	ascii := true
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s := b[i+1 : j]
			return s, j + 1, ascii || utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, 0, false
		case c >= 0x80:
			ascii = false
		}
	}
	return nil, 0, false
}

func boolean(b []byte, i int) (bool, int, bool) {
	switch {
	case len(b)-i >= 4 && string(b[i:i+4]) == "true":
		return true, i + 4, true
	case len(b)-i >= 5 && string(b[i:i+5]) == "false":
		return false, i + 5, true
	}
	return false, 0, false
}

// integer reads a JSON integer (no fraction, no exponent) that fits an
// int64.
func integer(b []byte, i int) (int64, int, bool) {
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	start := j
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j == start || (b[start] == '0' && j > start+1) {
		return 0, 0, false
	}
	if j < len(b) && (b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
		return 0, 0, false
	}
	n, err := strconv.ParseInt(string(b[i:j]), 10, 64)
	return n, j, err == nil
}

// skipValue finds where the value at i ends (json.Valid then checks it):
// strings with their escapes, nested objects and arrays, and scalars up
// to the next delimiter.
func skipValue(b []byte, i int) (int, bool) {
	depth := 0
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '"':
			for j++; j < len(b) && b[j] != '"'; j++ {
				if b[j] == '\\' {
					j++
				}
			}
			if j >= len(b) {
				return 0, false
			}
			if depth == 0 {
				return j + 1, true
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j, j > i // the end of what holds a scalar
			}
			depth--
			if depth == 0 {
				return j + 1, true
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return j, j > i
			}
		}
	}
	if depth == 0 && len(b) > i {
		return len(b), true
	}
	return 0, false
}

package engines

import (
	"encoding/base64"
	"path"
	"strings"
	"unicode/utf8"
)

// MaxFileBytes is the largest file file_tool makes (its content decoded).
const MaxFileBytes = 4 << 20

// mimes are the media types file_tool knows by extension: a fixed table,
// so that a name gives the same type on every machine.
var mimes = map[string]string{
	".html": "text/html", ".htm": "text/html", ".txt": "text/plain", ".md": "text/markdown",
	".csv": "text/csv", ".tsv": "text/tab-separated-values", ".json": "application/json",
	".xml": "application/xml", ".yaml": "application/yaml", ".yml": "application/yaml",
	".svg": "image/svg+xml", ".ics": "text/calendar", ".pdf": "application/pdf",
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
	".webp": "image/webp", ".zip": "application/zip",
}

// file is file_tool: a name and content make a file block; the model
// gets the name, the media type and the size.
func file(args map[string]any) (any, map[string]any, error) {
	name := strings.TrimSpace(str(args, "name"))
	switch {
	case name == "" || name == "." || name == "..":
		return nil, nil, errorf("name must be a file name, such as report.html")
	case strings.ContainsAny(name, "/\\"):
		return nil, nil, errorf("name %q must be a file name alone, without / or \\", name)
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return nil, nil, errorf("name %q has a control character", name)
	case len(name) > 255:
		return nil, nil, errorf("name is %d bytes long; at most 255", len(name))
	}
	content := str(args, "content")
	var data []byte
	switch enc := str(args, "encoding"); enc {
	case "", "text":
		data = []byte(content)
	case "base64":
		var err error
		if data, err = base64.StdEncoding.DecodeString(strings.Join(strings.Fields(content), "")); err != nil {
			return nil, nil, errorf("content is not base64 (encoding base64): %v", err)
		}
	}
	if len(data) > MaxFileBytes {
		return nil, nil, errorf("the file is %d bytes; at most %d", len(data), MaxFileBytes)
	}
	mime := strings.TrimSpace(str(args, "mime"))
	if mime == "" {
		mime = mimes[strings.ToLower(path.Ext(name))]
	}
	if mime == "" {
		mime = "application/octet-stream"
		if text(data) {
			mime = "text/plain"
		}
	} else if !strings.Contains(mime, "/") || strings.ContainsAny(mime, "\r\n") {
		return nil, nil, errorf("mime %q is not a media type such as text/html", mime)
	}
	if len(data) == 0 {
		return nil, nil, errorf("content is empty: a file needs something in it")
	}
	block := map[string]any{"type": "file", "name": name, "mime": mime, "data": base64.StdEncoding.EncodeToString(data)}
	return map[string]any{"shown": "file", "name": name, "mime": mime, "bytes": len(data)}, block, nil
}

// text reports whether data read as text: UTF-8 without control
// characters other than tab, line feed, carriage return and form feed.
func text(data []byte) bool {
	if !utf8.Valid(data) {
		return false
	}
	for _, b := range data {
		if b < 0x20 && b != '\t' && b != '\n' && b != '\r' && b != '\f' || b == 0x7f {
			return false
		}
	}
	return true
}

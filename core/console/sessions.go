package console

// Sessions: the tenant's sessions, a session's System and Trace Logs as a
// timeline, unanswered questions, knowledge documents.
//
// Everything is read through storage with the signed-in tenant's id, as the
// API reads it: a session, document or question of another tenant is not
// found. The pages are built from view models (strings ready to show), so
// that the templates only lay them out; html/template escapes every one.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"toolhost/storage"
)

// sessionsShown bounds the sessions a list shows (the newest).
const sessionsShown = 500

// unansweredShown bounds the unanswered questions a list shows (the newest).
const unansweredShown = 500

// stamp is a stored time, ready to show: Raw for a <time datetime>, Text
// to read, Full with the date and the zone.
type stamp struct {
	Raw, Text, Full string
}

// stampOf formats a stored RFC 3339 time (UTC) as a date and time.
func stampOf(s string) stamp {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return stamp{Raw: s, Text: s, Full: s}
	}
	t = t.UTC()
	return stamp{Raw: t.Format(time.RFC3339Nano), Text: t.Format("2006-01-02 15:04:05"), Full: t.Format("2006-01-02 15:04:05.000 UTC")}
}

// sessionRow is a session as the list and its page show it.
type sessionRow struct {
	ID, Agent, State string
	Closed           bool
	Created          stamp
	Finished         stamp
	AllowedTags      []string
	// Whitelist is whether the session has allowed_tool_tags at all: an
	// empty list refuses every tool, and is shown so.
	Whitelist bool
}

func sessionRowOf(s *storage.Session) sessionRow {
	row := sessionRow{ID: s.ID, Agent: s.Agent, State: s.State, Closed: s.Closed, Created: stampOf(s.CreatedAt), AllowedTags: s.AllowedTags, Whitelist: s.AllowedTags != nil}
	if s.FinishedAt != "" {
		row.Finished = stampOf(s.FinishedAt)
	}
	return row
}

// unansweredRow is an unanswered question to review.
type unansweredRow struct {
	ID        int64
	SessionID string
	Question  string
	Created   stamp
}

// sessions lists the tenant's sessions, newest first (?agent= keeps one
// agent's), and the unanswered questions to review.
func (c *Console) sessions(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return &consoleError{http.StatusMethodNotAllowed, "GET"}
	}
	ctx, tenant := r.Context(), tenantOf(r).ID
	agent := r.URL.Query().Get("agent")
	ss, err := c.DB.Sessions(ctx, tenant, agent, sessionsShown)
	if err != nil {
		return err
	}
	slices.Reverse(ss) // newest first
	rows := make([]sessionRow, len(ss))
	for i, s := range ss {
		rows[i] = sessionRowOf(s)
	}
	// The filter offers the tenant's agents, and those of the sessions
	// shown (an agent deleted since keeps its sessions).
	agents, err := c.DB.Agents(ctx, tenant)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, a := range agents {
		names[a.Name] = true
	}
	for _, s := range ss {
		names[s.Agent] = true
	}
	if agent != "" {
		names[agent] = true
	}
	agentNames := make([]string, 0, len(names))
	for n := range names {
		agentNames = append(agentNames, n)
	}
	sort.Strings(agentNames)
	us, err := c.DB.UnansweredQuestions(ctx, tenant, unansweredShown)
	if err != nil {
		return err
	}
	slices.Reverse(us)
	questions := make([]unansweredRow, len(us))
	for i, u := range us {
		questions[i] = unansweredRow{ID: u.ID, SessionID: u.SessionID, Question: u.Question, Created: stampOf(u.CreatedAt)}
	}
	c.render(w, r, "sessions", "Sessions", map[string]any{
		"Sessions": rows, "Agents": agentNames, "Agent": agent, "Limited": len(ss) == sessionsShown, "Shown": sessionsShown,
		"Unanswered": questions, "UnansweredLimited": len(us) == unansweredShown,
	})
	return nil
}

// logViews are the timeline's views: ?log= and what a tab says.
var logViews = []struct{ Key, Label, Kind string }{
	{"both", "Everything", ""},
	{"system", "System Logs", "system"},
	{"trace", "Trace Logs", "trace"},
}

// logTab is one of the timeline's views, as a link.
type logTab struct {
	Key, Label string
	Current    bool
}

// variable is one of a session's variables, its value as JSON.
type variable struct{ Name, Value string }

// messageRow is a message the session's tools sent to its user.
type messageRow struct {
	Text string
	At   stamp
}

// session shows a session: its agent, state and variables, its messages,
// and its logs as a timeline (?log=both, system or trace).
func (c *Console) session(w http.ResponseWriter, r *http.Request, id string) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return &consoleError{http.StatusMethodNotAllowed, "GET"}
	}
	ctx, tenant := r.Context(), tenantOf(r).ID
	sess, err := c.DB.Session(ctx, tenant, id)
	if errors.Is(err, storage.ErrNotFound) {
		return &consoleError{http.StatusNotFound, fmt.Sprintf("no session %q", id)}
	}
	if err != nil {
		return err
	}
	view := r.URL.Query().Get("log")
	kind, known := "", false
	var tabs []logTab
	for _, v := range logViews {
		if v.Key == view {
			kind, known = v.Kind, true
		}
	}
	if !known {
		view = "both"
	}
	for _, v := range logViews {
		tabs = append(tabs, logTab{Key: v.Key, Label: v.Label, Current: v.Key == view})
	}
	entries, err := c.DB.LogView(ctx, tenant, sess.ID, kind)
	if err != nil {
		return err
	}
	start, _ := time.Parse(time.RFC3339Nano, sess.CreatedAt)
	items := make([]logItem, len(entries))
	for i, e := range entries {
		items[i] = logItemOf(e, start)
	}
	// Messages are read by the session's id, which is the tenant's: it was
	// found with the tenant's id above.
	ms, err := c.DB.Messages(ctx, sess.ID)
	if err != nil {
		return err
	}
	messages := make([]messageRow, len(ms))
	for i, m := range ms {
		messages[i] = messageRow{Text: m.Text, At: stampOf(m.CreatedAt)}
	}
	vars := make([]variable, 0, len(sess.Variables))
	for name, v := range sess.Variables {
		b, _ := json.Marshal(v)
		vars = append(vars, variable{Name: name, Value: unescapeHTML(string(b))})
	}
	sort.Slice(vars, func(i, j int) bool { return vars[i].Name < vars[j].Name })
	c.render(w, r, "session", "Session "+sess.ID, map[string]any{
		"Session": sessionRowOf(sess), "Variables": vars, "Messages": messages,
		"Log": view, "Tabs": tabs, "Entries": items,
	})
	return nil
}

// logItem is one log entry on the timeline, ready to show.
type logItem struct {
	ID    int64
	Kind  string // system or trace
	Event string
	// Title says what happened ("Tool call"), Subject to what (the tool's
	// name), Summary how it went, in a few words.
	Title, Subject, Summary string
	Failed                  bool
	At                      stamp  // Text is the time of day
	Since                   string // since the session started
	Facts                   []fact
	Sections                []section
	Warnings                []string
	Output                  []string // the printed output, line by line
}

// fact is a short name and value of a log entry.
type fact struct{ Name, Value string }

// section is a longer part of a log entry (arguments, a result, a
// prompt), shown in a <details>.
type section struct {
	Name, Text string
	Open       bool
}

// logData is a log entry's data, its fields as JSON.
type logData map[string]json.RawMessage

func (d logData) has(k string) bool {
	v, ok := d[k]
	return ok && string(v) != "null"
}

func (d logData) str(k string) string {
	var s string
	json.Unmarshal(d[k], &s)
	return s
}

func (d logData) num(k string) (float64, bool) {
	var f float64
	if !d.has(k) || json.Unmarshal(d[k], &f) != nil {
		return 0, false
	}
	return f, true
}

func (d logData) boolean(k string) bool {
	var b bool
	json.Unmarshal(d[k], &b)
	return b
}

// text is a field as text: a string as it is, anything else as indented
// JSON.
func (d logData) text(k string) string {
	var s string
	if json.Unmarshal(d[k], &s) == nil {
		return s
	}
	return prettyJSON(d[k])
}

// prettyJSON indents JSON, keeping its order, and undoes the escapes of
// <, > and & that encoding/json adds (the page escapes what it shows).
func prettyJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return unescapeHTML(b.String())
}

// unescapeHTML turns the \u003c, \u003e and \u0026 escapes of JSON text
// back into their characters; every other escape stays.
func unescapeHTML(s string) string {
	if !strings.Contains(s, `\u00`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == 'u' && i+6 <= len(s) {
			switch s[i+2 : i+6] {
			case "003c":
				b.WriteByte('<')
				i += 5
				continue
			case "003e":
				b.WriteByte('>')
				i += 5
				continue
			case "0026":
				b.WriteByte('&')
				i += 5
				continue
			}
		}
		b.WriteString(s[i : i+2]) // an escape of one character: both kept
		i++
	}
	return b.String()
}

// toolError is a tool's or skill's error, as logged.
type toolError struct {
	Kind      string `json:"kind"`
	Type      string `json:"type"`
	Message   string `json:"message"`
	Traceback string `json:"traceback"`
}

func (e toolError) String() string {
	msg := e.Message
	if e.Type != "" {
		msg = e.Type + ": " + msg
	}
	if e.Kind != "" {
		msg += " (" + e.Kind + ")"
	}
	return msg
}

// errorOf reads a logged error; ok is false when there is none.
func (d logData) errorOf(k string) (toolError, bool) {
	var e toolError
	if !d.has(k) || json.Unmarshal(d[k], &e) != nil {
		return e, false
	}
	return e, true
}

// durationText shows milliseconds as a duration to read.
func durationText(ms float64) string {
	switch {
	case ms < 10:
		return strconv.FormatFloat(ms, 'f', 2, 64) + " ms"
	case ms < 1000:
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	default:
		return strconv.FormatFloat(ms/1000, 'f', 2, 64) + " s"
	}
}

// logItemOf lays out a log entry: each event's fields in their place, and
// an event this page does not know as its data.
func logItemOf(e storage.LogEntry, start time.Time) logItem {
	it := logItem{ID: e.ID, Kind: e.Kind, Event: e.Event, At: stampOf(e.CreatedAt)}
	if t, err := time.Parse(time.RFC3339Nano, e.CreatedAt); err == nil {
		it.At.Text = t.UTC().Format("15:04:05.000")
		if !start.IsZero() {
			it.Since = "+" + max(t.Sub(start), 0).Round(time.Millisecond).String()
		}
	}
	var d logData
	dec := json.NewDecoder(bytes.NewReader(e.Data))
	if dec.Decode(&d) != nil {
		it.Title = e.Event
		it.Sections = []section{{Name: "Data", Text: string(e.Data), Open: true}}
		return it
	}
	add := func(name, value string) {
		if value != "" {
			it.Facts = append(it.Facts, fact{name, value})
		}
	}
	// part shows a field as JSON; textPart a string field as its text.
	part := func(name, key string, open bool) {
		if d.has(key) {
			it.Sections = append(it.Sections, section{Name: name, Text: prettyJSON(d[key]), Open: open})
		}
	}
	textPart := func(name, key string, open bool) {
		if text := d.text(key); d.has(key) && text != "" {
			it.Sections = append(it.Sections, section{Name: name, Text: text, Open: open})
		}
	}
	// outcome is a call's success, or its failure with its error.
	outcome := func() {
		it.Failed = !d.boolean("success")
		it.Summary = "succeeded"
		if it.Failed {
			it.Summary = "failed"
			if te, ok := d.errorOf("error"); ok {
				it.Summary = "failed: " + te.String()
			}
		}
	}
	duration := func() {
		if ms, ok := d.num("duration_ms"); ok {
			add("Duration", durationText(ms))
		}
	}
	failure := func(key string) {
		if te, ok := d.errorOf(key); ok {
			it.Sections = append(it.Sections, section{Name: "Error", Text: te.String(), Open: true})
			if te.Traceback != "" {
				it.Sections = append(it.Sections, section{Name: "Traceback", Text: te.Traceback})
			}
		}
	}
	switch e.Event {
	case "session_start":
		it.Title = "Session started"
		it.Summary = fmt.Sprintf("agent %s, state %s", d.str("agent"), d.str("state"))
		part("Variables", "variables", true)
	case "skill_call":
		it.Title, it.Subject = "Skill", d.str("skill")
		outcome()
		add("Group", d.str("group"))
		duration()
		part("Variables set", "set", true)
		failure("error")
	case "tool_call":
		it.Title, it.Subject = "Tool call", d.str("name")
		if obj := d.str("tool"); obj != "" && obj != it.Subject {
			add("Tool", obj)
		}
		outcome()
		if ms, ok := d.num("duration_ms"); ok {
			it.Summary += " in " + durationText(ms)
		}
		add("Door", d.str("door"))
		add("Runtime", d.str("runtime"))
		if n, ok := d.num("worker"); ok && n != 0 {
			add("Worker", strconv.FormatFloat(n, 'f', -1, 64))
		}
		duration()
		if n, ok := d.num("attempts"); ok && n > 1 {
			add("Attempts", strconv.FormatFloat(n, 'f', -1, 64))
		}
		add("Fallback", d.str("fallback"))
		if d.boolean("replayed") {
			add("Replayed", "yes: the answer of an earlier call with the same idempotency key")
		}
		part("Arguments", "arguments", true)
		if it.Failed {
			failure("error")
		} else {
			part("Result", "result", true)
		}
		part("Errors of the attempts", "errors", false)
		var lines []string
		json.Unmarshal(d["output"], &lines)
		it.Output = lines
		json.Unmarshal(d["warnings"], &it.Warnings)
	case "tool_call_refused":
		it.Title, it.Subject = "Call refused", d.str("tool")
		it.Failed = true
		it.Summary = d.str("reason")
		add("Door", d.str("door"))
	case "state_change":
		it.Title = "State change"
		it.Summary = d.str("from") + " → " + d.str("to")
	case "session_finish":
		it.Title = "Session finished"
		if reason := d.str("abandoned"); reason != "" {
			it.Summary = "abandoned: " + reason
		}
		part("Variables", "variables", false)
		part("Finish skills", "skills", false)
	case "model_call":
		it.Title, it.Subject = "Model call", d.str("action")
		textPart("Prompt", "prompt", false)
		textPart("Generation", "generation", true)
		part("Action input", "action_input", true)
	default:
		it.Title = e.Event
		it.Sections = []section{{Name: "Data", Text: prettyJSON(e.Data), Open: true}}
	}
	return it
}

// docRow is a knowledge document in the list.
type docRow struct {
	Name     string
	Size     int64
	Passages int
	Updated  stamp
}

// knowledge lists the knowledge documents (GET) or stores one (POST: a
// name, and a text or markdown file or pasted text).
func (c *Console) knowledge(w http.ResponseWriter, r *http.Request) error {
	data := map[string]any{"Name": "", "FormText": ""}
	code := http.StatusOK
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		q := r.URL.Query()
		data["Stored"], data["Deleted"] = q.Get("stored"), q.Get("deleted")
	case http.MethodPost:
		name, text, err := c.knowledgeUpload(r)
		if err == nil {
			err = c.DB.PutKnowledge(r.Context(), tenantOf(r).ID, name, text)
			if errors.Is(err, storage.ErrNoFTS5) {
				err = &consoleError{http.StatusNotImplemented, err.Error()}
			}
			if qe := (*storage.QuotaError)(nil); errors.As(err, &qe) {
				err = quotaMessage(qe)
			}
		}
		var ce *consoleError
		if errors.As(err, &ce) {
			// The form again, with the reason and what was typed.
			code = ce.code
			data["Error"], data["Name"] = ce.msg, r.PostFormValue("name")
			if len(r.PostFormValue("text")) <= 1<<20 {
				data["FormText"] = r.PostFormValue("text")
			}
			break
		}
		if err != nil {
			return err
		}
		http.Redirect(w, r, "/knowledge?stored="+url.QueryEscape(name), http.StatusSeeOther)
		return nil
	default:
		return &consoleError{http.StatusMethodNotAllowed, "GET or POST"}
	}
	docs, err := c.DB.Knowledge(r.Context(), tenantOf(r).ID)
	if err != nil {
		return err
	}
	rows := make([]docRow, len(docs))
	for i, d := range docs {
		rows[i] = docRow{Name: d.Name, Size: d.Size, Passages: d.Passages, Updated: stampOf(d.UpdatedAt)}
	}
	data["Docs"], data["MaxMB"] = rows, c.maxFileSize()>>20
	if code != http.StatusOK {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(code)
	}
	c.render(w, r, "knowledge", "Knowledge", data)
	return nil
}

// knowledgeUpload reads an uploaded document: its name (the file's when
// none is given) and its text, from a file or pasted.
func (c *Console) knowledgeUpload(r *http.Request) (name, text string, err error) {
	limit := c.maxFileSize()
	most := fmt.Sprintf("%d MiB", limit>>20)
	if limit%(1<<20) != 0 {
		most = fmt.Sprintf("%d bytes", limit)
	}
	tooLarge := &consoleError{http.StatusRequestEntityTooLarge, "a document is at most " + most}
	r.Body = http.MaxBytesReader(nil, r.Body, limit+64<<10)
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			var mb *http.MaxBytesError
			if errors.As(err, &mb) || r.ContentLength > limit {
				return "", "", tooLarge
			}
			return "", "", &consoleError{http.StatusBadRequest, "the form is malformed"}
		}
		if f, fh, err := r.FormFile("file"); err == nil {
			defer f.Close()
			b, err := io.ReadAll(io.LimitReader(f, limit+1))
			if err != nil {
				return "", "", err
			}
			if int64(len(b)) > limit {
				return "", "", tooLarge
			}
			if len(b) > 0 {
				text, name = string(b), fh.Filename
			}
		}
	} else if err := r.ParseForm(); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return "", "", tooLarge
		}
		return "", "", &consoleError{http.StatusBadRequest, "the form is malformed"}
	}
	if text == "" {
		// A textarea's lines end in CRLF when the form is sent.
		text = strings.ReplaceAll(r.PostFormValue("text"), "\r\n", "\n")
	}
	if given := strings.TrimSpace(r.PostFormValue("name")); given != "" {
		name = given
	}
	switch {
	case strings.TrimSpace(text) == "":
		return "", "", &consoleError{http.StatusBadRequest, "choose a text or markdown file, or paste the text"}
	case int64(len(text)) > limit:
		return "", "", tooLarge
	case !utf8.ValidString(text):
		return "", "", &consoleError{http.StatusBadRequest, "a knowledge document is UTF-8 text; this one is not valid UTF-8"}
	}
	if err := storage.CheckKnowledgeName(name); err != nil {
		return "", "", &consoleError{http.StatusBadRequest, err.Error()}
	}
	return name, text, nil
}

// knowledgeDoc shows a document's text (GET; ?format=text downloads it) or
// deletes it (POST action=delete).
func (c *Console) knowledgeDoc(w http.ResponseWriter, r *http.Request, escaped string) error {
	name, err := url.PathUnescape(escaped)
	if err == nil {
		err = storage.CheckKnowledgeName(name)
	}
	if err != nil {
		return &consoleError{http.StatusBadRequest, "bad document name: " + err.Error()}
	}
	ctx, tenant := r.Context(), tenantOf(r).ID
	notFound := &consoleError{http.StatusNotFound, fmt.Sprintf("no knowledge document %q", name)}
	switch r.Method {
	case http.MethodPost:
		if r.PostFormValue("action") != "delete" {
			return &consoleError{http.StatusBadRequest, "unknown action"}
		}
		err := c.DB.DeleteKnowledge(ctx, tenant, name)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			return notFound
		case errors.Is(err, storage.ErrNoFTS5):
			return &consoleError{http.StatusNotImplemented, err.Error()}
		case err != nil:
			return err
		}
		http.Redirect(w, r, "/knowledge?deleted="+url.QueryEscape(name), http.StatusSeeOther)
		return nil
	case http.MethodGet, http.MethodHead:
	default:
		return &consoleError{http.StatusMethodNotAllowed, "GET or POST"}
	}
	text, err := c.DB.KnowledgeText(ctx, tenant, name)
	if errors.Is(err, storage.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return err
	}
	if r.URL.Query().Get("format") == "text" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Disposition", "attachment; filename*=UTF-8''"+url.PathEscape(name))
		io.WriteString(w, text)
		return nil
	}
	docs, err := c.DB.Knowledge(ctx, tenant)
	if err != nil {
		return err
	}
	doc := &docRow{Name: name, Size: int64(len(text))}
	for _, d := range docs {
		if d.Name == name {
			doc = &docRow{Name: d.Name, Size: d.Size, Passages: d.Passages, Updated: stampOf(d.UpdatedAt)}
		}
	}
	c.render(w, r, "knowledge", name, map[string]any{"Doc": doc, "Text": text})
	return nil
}

// unanswered marks a question reviewed (POST action=delete): it leaves the
// list.
func (c *Console) unanswered(w http.ResponseWriter, r *http.Request, id string) error {
	if r.Method != http.MethodPost {
		return &consoleError{http.StatusMethodNotAllowed, "POST"}
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return &consoleError{http.StatusNotFound, fmt.Sprintf("no unanswered question %q", id)}
	}
	if r.PostFormValue("action") != "delete" {
		return &consoleError{http.StatusBadRequest, "unknown action"}
	}
	if err := c.DB.DeleteUnanswered(r.Context(), tenantOf(r).ID, n); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return &consoleError{http.StatusNotFound, fmt.Sprintf("no unanswered question %d", n)}
		}
		return err
	}
	http.Redirect(w, r, "/sessions#unanswered", http.StatusSeeOther)
	return nil
}

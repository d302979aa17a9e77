package console

// The Playground: run a group's tool, or an agent's session through its
// states, from forms generated from the tools' parameter types, and see
// each answer as spec 000's widget shows it (the page's script renders the
// blocks). Calls take the pipeline like every other door.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"toolhost/core/calls"
	"toolhost/core/definition"
	"toolhost/core/pipeline"
	"toolhost/core/registry"
	"toolhost/core/session"
	"toolhost/core/typeexpr"
	"toolhost/storage"
)

// playground routes the Playground: the page (GET), and its actions
// (POST, JSON in and out, from the page's script).
func (c *Console) playground(w http.ResponseWriter, r *http.Request, action string) error {
	if action == "" {
		return c.playgroundPage(w, r)
	}
	if r.Method != http.MethodPost {
		return &consoleError{http.StatusMethodNotAllowed, "POST"}
	}
	// Only the page's script sends JSON (a form, even of the same origin,
	// cannot).
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return jsonError(w, http.StatusUnsupportedMediaType, "the Playground takes application/json")
	}
	var req struct {
		Group, Tool, Agent, Session, State, ID string
		Arguments                              json.RawMessage
		Variables                              map[string]any
	}
	// A key the Playground does not take (an idempotency_key, say) is
	// refused, never dropped.
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return jsonError(w, http.StatusBadRequest, "the request is not the JSON the page sends: "+err.Error())
	}
	tenant := tenantOf(r).ID
	ctx := r.Context()
	switch action {
	case "call":
		a, err := c.Calls.Call(ctx, tenant, req.Tool, req.Group, pipeline.Request{Door: pipeline.DoorConsole, Args: req.Arguments})
		return answer(w, a, err)
	case "calltext":
		t, err := c.Calls.Find(ctx, tenant, req.Tool, req.Group)
		if err != nil {
			return writeJSON(w, map[string]string{"call_text": ""})
		}
		text, _ := c.Calls.Pipeline(tenant).CallText(ctx, t.Tool, req.Arguments)
		return writeJSON(w, map[string]string{"call_text": text})
	case "continue":
		a, err := c.Calls.Resume(ctx, tenant, req.ID)
		return answer(w, a, err)
	case "start":
		eng, err := c.Calls.Engine(ctx, tenant, req.Agent)
		if err != nil {
			return jsonError(w, http.StatusConflict, err.Error())
		}
		sess, skills, err := eng.StartWith(ctx, req.Variables, nil)
		var se *session.StartError
		if errors.As(err, &se) {
			// The missing variables are named, for the form to mark them.
			return writeJSONStatus(w, se.Status, map[string]any{"error": se.Message, "missing": se.Missing})
		}
		if err != nil {
			return jsonError(w, http.StatusConflict, err.Error())
		}
		return writeJSON(w, map[string]any{"session": sess, "skills": skills})
	case "session":
		return c.inSession(w, r, req.Session, func(r *http.Request, eng *session.Engine, s *storage.Session) (any, error) {
			return c.sessionView(r, eng, s)
		})
	case "session-call":
		return c.inSession(w, r, req.Session, func(r *http.Request, eng *session.Engine, s *storage.Session) (any, error) {
			ctx := r.Context()
			e := *eng
			e.Door = pipeline.DoorConsole
			return e.CallWith(ctx, s, req.Tool, req.Arguments, session.CallOptions{Group: req.Group})
		})
	case "state":
		return c.inSession(w, r, req.Session, func(r *http.Request, eng *session.Engine, s *storage.Session) (any, error) {
			ctx := r.Context()
			return nil, eng.SetState(ctx, s, req.State)
		})
	case "finish":
		return c.inSession(w, r, req.Session, func(r *http.Request, eng *session.Engine, s *storage.Session) (any, error) {
			ctx := r.Context()
			skills, err := eng.Finish(ctx, s)
			return map[string]any{"skills": skills}, err
		})
	}
	return jsonError(w, http.StatusNotFound, "no playground action "+action)
}

// inSession runs f on a session of the tenant, under its lock, and
// answers what f returns (a refusal as 422 with its message).
// f gets the request on the lock's context (see calls.Service.InSession).
func (c *Console) inSession(w http.ResponseWriter, r *http.Request, id string, f func(*http.Request, *session.Engine, *storage.Session) (any, error)) error {
	tenant := tenantOf(r).ID
	var out any
	err := c.Calls.InSession(r.Context(), tenant, id, func(ctx context.Context, s *storage.Session) error {
		r := r.WithContext(ctx)
		eng, err := c.Calls.Engine(ctx, tenant, s.Agent)
		if err != nil {
			return err
		}
		out, err = f(r, eng, s)
		return err
	})
	var ns *calls.NoSessionError
	var te *session.ToolError
	switch {
	case errors.As(err, &ns):
		return jsonError(w, http.StatusNotFound, err.Error())
	case errors.As(err, &te):
		return writeJSONStatus(w, http.StatusUnprocessableEntity, map[string]any{"error": te.Message, "errors": te.Errors})
	case err != nil:
		return jsonError(w, http.StatusConflict, err.Error())
	}
	if a, ok := out.(*pipeline.Answer); ok {
		return answer(w, a, nil)
	}
	if out == nil {
		out = map[string]any{"ok": true}
	}
	return writeJSON(w, out)
}

// sessionView is what the page shows of a session: its state, the state's
// tools with their forms, the agent's states, its messages.
func (c *Console) sessionView(r *http.Request, eng *session.Engine, s *storage.Session) (any, error) {
	tools, groups, _, _ := eng.StateTools(s.State)
	forms := make([]toolForm, len(tools))
	for i, t := range tools {
		forms[i] = formOf(groups[i], t)
	}
	states := make([]string, len(eng.Agent.States))
	for i, st := range eng.Agent.States {
		states[i] = st.Name
	}
	msgs, err := c.DB.Messages(r.Context(), s.ID)
	if err != nil {
		return nil, err
	}
	skills, err := c.skillsRun(r, s.ID)
	if err != nil {
		return nil, err
	}
	return map[string]any{"session": s, "tools": forms, "states": states, "messages": msgs,
		"instructions": session.Instructions(eng.Agent, s.Variables), "skills": skills}, nil
}

// skillRun is a skill a session ran, as its page shows it: when (at the
// "start" or the "finish"), and its outcome.
type skillRun struct {
	When    string          `json:"when"`
	Skill   string          `json:"skill"`
	Group   string          `json:"group"`
	Success bool            `json:"success"`
	Set     json.RawMessage `json:"set,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// skillsRun reads the skills a session ran from its System Logs: those
// logged just before its session_finish entry are its finish skills, the
// others ran at its start.
func (c *Console) skillsRun(r *http.Request, id string) ([]skillRun, error) {
	entries, err := c.DB.Logs(r.Context(), tenantOf(r).ID, id, "system")
	if err != nil {
		return nil, err
	}
	out := []skillRun{}
	run := 0 // the skill_call entries since the last other entry
	for _, e := range entries {
		switch e.Event {
		case "skill_call":
			var d logData
			json.Unmarshal(e.Data, &d)
			sr := skillRun{When: "start", Skill: d.str("skill"), Group: d.str("group"), Success: d.boolean("success"), Set: d["set"], Error: d["error"]}
			out = append(out, sr)
			run++
		case "session_finish":
			for i := len(out) - run; i < len(out); i++ {
				out[i].When = "finish"
			}
			run = 0
		default:
			run = 0
		}
	}
	return out, nil
}

// answer writes a call's answer, or its refusal.
func answer(w http.ResponseWriter, a *pipeline.Answer, err error) error {
	if err != nil {
		var ae *pipeline.ArgumentsError
		if errors.As(err, &ae) {
			return writeJSONStatus(w, http.StatusUnprocessableEntity, map[string]any{"error": err.Error(), "errors": ae.Errors})
		}
		var ut *registry.UnknownToolError
		var ug *registry.UnknownGroupError
		var nr *registry.NotReadyError
		var be *calls.BuiltinError
		if errors.As(err, &ut) || errors.As(err, &ug) || errors.As(err, &nr) || errors.As(err, &be) || errors.Is(err, storage.ErrNotFound) {
			return jsonError(w, http.StatusUnprocessableEntity, err.Error())
		}
		return jsonError(w, http.StatusConflict, err.Error())
	}
	return writeJSON(w, a)
}

func writeJSON(w http.ResponseWriter, v any) error { return writeJSONStatus(w, http.StatusOK, v) }

func writeJSONStatus(w http.ResponseWriter, code int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func jsonError(w http.ResponseWriter, code int, msg string) error {
	return writeJSONStatus(w, code, map[string]any{"error": msg})
}

// toolForm is what the page's script needs to build a tool's form.
type toolForm struct {
	Group       string  `json:"group"`
	ObjectName  string  `json:"object_name"`
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Params      []field `json:"params"`
}

// field describes one input of a form, from a parameter's type: the
// script turns kinds into controls (text, number, checkbox, date, select
// for a Literal, a list with add and remove, key and value rows, a choice
// of alternative for a union).
type field struct {
	Name        string  `json:"name,omitempty"`
	Description string  `json:"description,omitempty"`
	Type        string  `json:"type"` // the type expression, as written
	Kind        string  `json:"kind"`
	Optional    bool    `json:"optional,omitempty"`
	Values      []any   `json:"values,omitempty"` // Literal
	Elem        *field  `json:"elem,omitempty"`   // list
	Key         *field  `json:"key,omitempty"`    // dict
	Value       *field  `json:"value,omitempty"`  // dict
	Options     []field `json:"options,omitempty"`
}

// formOf describes a tool's form.
func formOf(group string, t *definition.Tool) toolForm {
	f := toolForm{Group: group, ObjectName: t.ObjectName, Name: t.Name, Description: t.Description, Params: []field{}}
	if t.Builtin {
		f.Group = ""
	}
	for _, p := range t.Parameters {
		fd := fieldOf(p.Type)
		fd.Name, fd.Description, fd.Optional = p.Name, p.Description, p.Optional
		f.Params = append(f.Params, fd)
	}
	return f
}

// fieldOf describes a type.
func fieldOf(t *typeexpr.Type) field {
	if t == nil {
		return field{Kind: "any", Type: "any"}
	}
	f := field{Kind: t.Kind.String(), Type: t.String()}
	switch t.Kind {
	case typeexpr.Array:
		if t.Elem != nil {
			e := fieldOf(t.Elem)
			f.Elem = &e
		}
	case typeexpr.Object:
		if t.Value != nil {
			k, v := fieldOf(t.Key), fieldOf(t.Value)
			f.Key, f.Value = &k, &v
		}
	case typeexpr.Literal:
		for _, v := range t.Values {
			f.Values = append(f.Values, v.JSON())
		}
	case typeexpr.Union:
		for _, o := range t.Options {
			f.Options = append(f.Options, fieldOf(o))
		}
	}
	return f
}

// playgroundPage is the Playground: a tool of a Ready group, an agent to
// start a session of, or a session to carry on.
func (c *Console) playgroundPage(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return &consoleError{http.StatusMethodNotAllowed, "GET"}
	}
	tenant := tenantOf(r).ID
	q := r.URL.Query()
	defs, rows, err := c.Registry.Definitions(r.Context(), tenant)
	if err != nil {
		return err
	}
	var groups []map[string]any
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if definition.Status(rows[n].Status) != definition.Ready {
			continue
		}
		var tools []map[string]string
		for _, t := range defs[n].Tools {
			tools = append(tools, map[string]string{"ObjectName": t.ObjectName, "Name": t.Name,
				"URL": "/playground?group=" + url.QueryEscape(n) + "&tool=" + url.QueryEscape(t.ObjectName)})
		}
		groups = append(groups, map[string]any{"Name": n, "Tools": tools})
	}
	agents, err := c.DB.Agents(r.Context(), tenant)
	if err != nil {
		return err
	}
	data := map[string]any{"Groups": groups, "Agents": agents}
	switch {
	case q.Get("tool") != "":
		t, err := c.Registry.FindTool(r.Context(), tenant, q.Get("tool"), false, q.Get("group"))
		if err != nil || t.Def == nil {
			return &consoleError{http.StatusNotFound, fmt.Sprintf("no Ready tool %q in group %q", q.Get("tool"), q.Get("group"))}
		}
		b, _ := json.Marshal(formOf(t.Def.Name, t.Tool))
		data["Form"] = string(b)
		data["Tool"] = t.Tool
		data["Group"] = t.Def.Name
	case q.Get("agent") != "":
		a, err := c.Calls.Agent(r.Context(), tenant, q.Get("agent"))
		if err != nil {
			return &consoleError{http.StatusNotFound, fmt.Sprintf("no agent %q", q.Get("agent"))}
		}
		data["Agent"] = a.Name
		data["Inputs"] = initInputs(defs, a)
	case q.Get("session") != "":
		// The session's view comes with the page: its first content needs
		// no second round trip.
		id := q.Get("session")
		var view any
		err := c.Calls.InSession(r.Context(), tenant, id, func(ctx context.Context, s *storage.Session) error {
			eng, err := c.Calls.Engine(ctx, tenant, s.Agent)
			if err != nil {
				return err
			}
			view, err = c.sessionView(r.WithContext(ctx), eng, s)
			return err
		})
		var ns *calls.NoSessionError
		if errors.As(err, &ns) {
			return &consoleError{http.StatusNotFound, err.Error()}
		}
		if err == nil {
			b, _ := json.Marshal(view)
			data["View"] = string(b)
		}
		data["Session"] = id
	}
	c.render(w, r, "playground", "Playground", data)
	return nil
}

// initInputs are the variables the init skills of an agent's groups
// (among defs) take, to ask for before a session starts.
func initInputs(defs map[string]*definition.Group, a *definition.Agent) []map[string]string {
	seen := map[string]bool{}
	var out []map[string]string
	for _, ref := range a.ToolGroups {
		g := defs[ref.Name]
		if g == nil {
			continue
		}
		for _, sk := range g.Skills {
			if !sk.SessionInit {
				continue
			}
			for _, in := range sk.Inputs {
				if seen[in.Name] {
					continue
				}
				seen[in.Name] = true
				typ, required := "", ""
				if in.DType != nil {
					typ = in.DType.String()
					if !in.DType.Nullable() {
						required = "required" // a start without it is refused
					}
				}
				out = append(out, map[string]string{"Name": in.Name, "Type": typ, "Description": strings.TrimSpace(in.Description), "Skill": sk.Name, "Required": required})
			}
		}
	}
	return out
}

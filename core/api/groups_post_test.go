package api

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestPostGroupAnswers: POST /v1/groups answers 201 with a Location when it
// creates a group and 200 when it replaces one (or gets the same bytes
// again), each with the generation GET answers; an Invalid group is
// stored (201, status Invalid, GET finds it), an Invalid agent is refused
// with 422 and not stored, and a definition without a name is a 422.
func TestPostGroupAnswers(t *testing.T) {
	srv, token, _ := newServer(t)
	def := func(name, extra string) string {
		return "kind: Plugin\nname: " + name + "\ndescription: d\ndependencies: [m.py]\ntools:\n" +
			"  - {kind: Tool, object_name: O, name: n, description: d" + extra + ", implementation: m.f, parameters: []}\n"
	}
	type answer struct {
		Name       string `json:"name"`
		Status     string `json:"status"`
		Generation int64  `json:"generation"`
	}
	lastGen := map[string]int64{} // by group
	steps := []struct {
		name     string
		yaml     string
		code     int
		status   string
		location string
		newGen   bool // a generation past the one before
	}{
		{"create", def("G", ""), 201, "Incomplete", "/v1/groups/G", true},
		{"the same bytes again", def("G", ""), 200, "Incomplete", "", false},
		{"replace", def("G", " two"), 200, "Incomplete", "", true},
		{"create an Invalid group", def("Bad G", "") + "    oops: [\n", 201, "Invalid", "/v1/groups/Bad%20G", true},
	}
	for _, st := range steps {
		resp, b := request(t, srv, token, "POST", "/v1/groups", st.yaml)
		var a answer
		json.Unmarshal(b, &a)
		if resp.StatusCode != st.code || a.Status != st.status || resp.Header.Get("Location") != st.location || a.Generation <= 0 {
			t.Fatalf("%s: %d (want %d), Location %q (want %q): %s", st.name, resp.StatusCode, st.code, resp.Header.Get("Location"), st.location, b)
		}
		if before := lastGen[a.Name]; st.newGen && a.Generation <= before || !st.newGen && a.Generation != before {
			t.Errorf("%s: generation %d after %d", st.name, a.Generation, before)
		}
		lastGen[a.Name] = a.Generation
		resp, b = request(t, srv, token, "GET", "/v1/groups/"+strings.ReplaceAll(a.Name, " ", "%20"), "")
		var got answer
		json.Unmarshal(b, &got)
		if resp.StatusCode != 200 || got.Generation != a.Generation || got.Status != a.Status {
			t.Errorf("%s: GET answers %d %s; POST answered generation %d", st.name, resp.StatusCode, b, a.Generation)
		}
	}
	// No name: nothing to store it under.
	if resp, b := request(t, srv, token, "POST", "/v1/groups", "kind: Plugin\n"); resp.StatusCode != 422 {
		t.Errorf("no name: %d %s", resp.StatusCode, b)
	}
	// An Invalid agent is refused and not stored.
	agent := "kind: Agent\nname: Ag\ndescription: d\ninstructions: i\nagent_type: T\ntool_groups: [G]\nstates:\n" +
		"  - {kind: StateConfig, name: S, description: d, init_state: true, final_state: true, available_tools: {T: [Nope]}}\n"
	if resp, b := request(t, srv, token, "POST", "/v1/agents", agent); resp.StatusCode != 422 {
		t.Errorf("invalid agent: %d %s", resp.StatusCode, b)
	}
	if resp, b := request(t, srv, token, "GET", "/v1/agents/Ag", ""); resp.StatusCode != 404 {
		t.Errorf("the refused agent: GET answers %d %s", resp.StatusCode, b)
	}
}

// TestPostAgentAnswers: POST /v1/agents answers as POST /v1/groups does,
// 201 with a Location when it creates an agent and 200 without one when
// it replaces it; the Location is where GET finds the agent.
func TestPostAgentAnswers(t *testing.T) {
	srv, token, _ := newServer(t)
	agent := func(name, description string) string {
		return "kind: Agent\nname: " + name + "\ndescription: " + description + "\ninstructions: i\nagent_type: T\nstates:\n" +
			"  - {kind: StateConfig, name: S, description: d, init_state: true, final_state: true, available_tools: [FinishSession]}\n"
	}
	for _, st := range []struct {
		name, yaml string
		code       int
		location   string
	}{
		{"create", agent("Helper Bot", "one"), 201, "/v1/agents/Helper%20Bot"},
		{"replace", agent("Helper Bot", "two"), 200, ""},
		{"the same again", agent("Helper Bot", "two"), 200, ""},
		{"create another", agent("Second", "one"), 201, "/v1/agents/Second"},
	} {
		resp, b := request(t, srv, token, "POST", "/v1/agents", st.yaml)
		if resp.StatusCode != st.code || resp.Header.Get("Location") != st.location {
			t.Errorf("%s: %d (want %d), Location %q (want %q): %s", st.name, resp.StatusCode, st.code, resp.Header.Get("Location"), st.location, b)
			continue
		}
		var a struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		}
		json.Unmarshal(b, &a)
		if st.location != "" {
			resp, b = request(t, srv, token, "GET", st.location, "")
			var got struct {
				Name string `json:"name"`
			}
			json.Unmarshal(b, &got)
			if resp.StatusCode != 200 || got.Name != a.Name {
				t.Errorf("%s: GET %s answers %d %s", st.name, st.location, resp.StatusCode, b)
			}
		}
	}
}

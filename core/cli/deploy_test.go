package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"toolhost/core/api"
	"toolhost/core/calls"
	"toolhost/storage"
)

// The Kubernetes manifests of docs/deploy.md, checked against what they
// name: the serve command's flags, the API's routes and each other.

// k8sDir holds the manifests.
const k8sDir = "../../docs/k8s"

// deployFlags are the serve flags that docs/deploy.md and docs/k8s rely on,
// whether or not a manifest passes them on the command line. The
// Deployment selects PostgreSQL with TOOLHOST_DB, the environment form of
// --db: until serve has --db, this list fails, and the manifests describe a
// server that does not exist yet.
var deployFlags = []string{"addr", "data", "db", "max-file-mb", "shutdown-grace", "token-cache"}

// drainTail is what serve may take after --shutdown-grace before it exits
// (runServe): up to 10 s for the calls it cut to answer, then 5 s for MCP
// sessions and open connections to close.
const drainTail = 15 * time.Second

// serveFlag is one flag of toolhost serve, as its --help lists it.
type serveFlag struct {
	value bool   // it takes a value (every flag but a boolean one)
	def   string // its default, "" when the help shows none
}

// serveFlags reads toolhost serve's flags from its --help, through the
// same entry point as the command line.
func serveFlags(t *testing.T) map[string]serveFlag {
	t.Helper()
	code, help, _ := run("serve", "--help")
	if code != ExitOK {
		t.Fatalf("toolhost serve --help: exit %d\n%s", code, help)
	}
	// printFlags: "  --name [TYPE]    usage", the usage on the next lines
	// when the name is long, and "(default X)" at the end of the usage.
	head := regexp.MustCompile(`^  --([A-Za-z0-9][A-Za-z0-9_-]*)( [^ ]+)?(?:\s{2,}(.*))?$`)
	def := regexp.MustCompile(`\(default (.*)\)$`)
	flags := map[string]serveFlag{}
	last := ""
	for _, line := range strings.Split(help, "\n") {
		if m := head.FindStringSubmatch(line); m != nil {
			last = m[1]
			flags[last] = serveFlag{value: m[2] != ""}
			line = m[3]
		}
		if m := def.FindStringSubmatch(line); m != nil && last != "" {
			f := flags[last]
			f.def = strings.Trim(m[1], `"`)
			flags[last] = f
		}
	}
	if len(flags) < 10 {
		t.Fatalf("read only %d flags from toolhost serve --help:\n%s", len(flags), help)
	}
	return flags
}

func flagNames(flags map[string]serveFlag) string {
	var names []string
	for n := range flags {
		names = append(names, "--"+n)
	}
	sort.Strings(names)
	return strings.Join(names, " ")
}

// k8sDoc is one YAML document of a manifest file.
type k8sDoc struct {
	where string // file and document number, for messages
	node  yaml.Node
	head  struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name      string `yaml:"name"`
			Namespace string `yaml:"namespace"`
		} `yaml:"metadata"`
	}
}

// k8sDocs reads every YAML document of docs/k8s/*.yaml.
func k8sDocs(t *testing.T) []*k8sDoc {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(k8sDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s (%v)", k8sDir, err)
	}
	var docs []*k8sDoc
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ds, err := parseK8s("docs/k8s/"+filepath.Base(f), b)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, ds...)
	}
	return docs
}

// parseK8s reads the YAML documents of one manifest file.
func parseK8s(name string, b []byte) ([]*k8sDoc, error) {
	var docs []*k8sDoc
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for i := 1; ; i++ {
		d := &k8sDoc{where: fmt.Sprintf("%s (document %d)", name, i)}
		if err := dec.Decode(&d.node); errors.Is(err, io.EOF) {
			return docs, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", d.where, err)
		}
		if len(d.node.Content) == 0 {
			continue // an empty document (a trailing ---)
		}
		if err := d.node.Decode(&d.head); err != nil {
			return nil, fmt.Errorf("%s: %w", d.where, err)
		}
		docs = append(docs, d)
	}
}

// The parts of the objects that the checks read.
type (
	k8sProbe struct {
		HTTPGet *struct {
			Path string `yaml:"path"`
			Port any    `yaml:"port"`
		} `yaml:"httpGet"`
	}
	k8sContainer struct {
		Name    string   `yaml:"name"`
		Command []string `yaml:"command"`
		Args    []string `yaml:"args"`
		Env     []struct {
			Name      string `yaml:"name"`
			Value     string `yaml:"value"`
			ValueFrom *struct {
				SecretKeyRef *struct {
					Name string `yaml:"name"`
					Key  string `yaml:"key"`
				} `yaml:"secretKeyRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
		} `yaml:"ports"`
		StartupProbe   *k8sProbe `yaml:"startupProbe"`
		LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
		ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
		Lifecycle      *struct {
			PreStop *struct {
				Exec *struct {
					Command []string `yaml:"command"`
				} `yaml:"exec"`
				Sleep *struct {
					Seconds int `yaml:"seconds"`
				} `yaml:"sleep"`
			} `yaml:"preStop"`
		} `yaml:"lifecycle"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	}
	k8sDeployment struct {
		Spec struct {
			Replicas *int `yaml:"replicas"`
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			Template struct {
				Metadata struct {
					Labels map[string]string `yaml:"labels"`
				} `yaml:"metadata"`
				Spec struct {
					TerminationGracePeriodSeconds *int           `yaml:"terminationGracePeriodSeconds"`
					Containers                    []k8sContainer `yaml:"containers"`
					Volumes                       []struct {
						Name     string    `yaml:"name"`
						EmptyDir *struct{} `yaml:"emptyDir"`
					} `yaml:"volumes"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	k8sSecret struct {
		Data       map[string]string `yaml:"data"`
		StringData map[string]string `yaml:"stringData"`
	}
	k8sSelecting struct { // a Service or a PodDisruptionBudget
		Spec struct {
			Selector any `yaml:"selector"`
			Ports    []struct {
				TargetPort any `yaml:"targetPort"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
)

// serveCommand is a toolhost container's serve invocation: its flags (name
// → value; "true" for a boolean flag given alone) and what it got wrong.
type serveCommand struct {
	flags    map[string]string
	problems []string
}

// parseServe reads the arguments after "serve" in a container's command
// and args the way serve's flag set does: -name or --name, with its value
// after "=" or, for a flag that takes one, as the next argument.
func parseServe(c k8sContainer, known map[string]serveFlag) (serveCommand, bool) {
	argv := append(append([]string(nil), c.Command...), c.Args...)
	at := -1
	for i, a := range argv {
		if a == "serve" {
			at = i
			break
		}
	}
	if at < 0 {
		return serveCommand{}, false
	}
	sc := serveCommand{flags: map[string]string{}}
	rest := argv[at+1:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			sc.problems = append(sc.problems, fmt.Sprintf("argument %q is not a flag (serve takes none)", a))
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		f, ok := known[name]
		if !ok {
			sc.problems = append(sc.problems, fmt.Sprintf("--%s is not a flag of toolhost serve", name))
			continue
		}
		switch {
		case hasValue:
		case !f.value:
			value = "true"
		case i+1 < len(rest):
			i++
			value = rest[i]
		default:
			sc.problems = append(sc.problems, fmt.Sprintf("--%s needs a value", name))
		}
		sc.flags[name] = value
	}
	return sc, true
}

// flagOr is a flag's value as given, or serve's default.
func (sc serveCommand) flagOr(name string, known map[string]serveFlag) string {
	if v, ok := sc.flags[name]; ok {
		return v
	}
	return known[name].def
}

// TestDeployFlags: the flags the deployment documents rely on are flags of
// toolhost serve.
func TestDeployFlags(t *testing.T) {
	known := serveFlags(t)
	for _, name := range deployFlags {
		t.Run(name, func(t *testing.T) {
			if _, ok := known[name]; !ok {
				t.Errorf("toolhost serve has no --%s, which docs/deploy.md and docs/k8s rely on "+
					"(--db and TOOLHOST_DB come with the PostgreSQL backend); serve's flags: %s", name, flagNames(known))
			}
		})
	}
}

// TestK8sManifests: every document names itself, and the Deployment runs a
// serve that exists, probes routes the API answers and outlasts its drain.
func TestK8sManifests(t *testing.T) {
	docs := k8sDocs(t)
	for _, d := range docs {
		t.Run(d.where, func(t *testing.T) {
			for _, f := range []struct{ field, value string }{
				{"apiVersion", d.head.APIVersion}, {"kind", d.head.Kind}, {"metadata.name", d.head.Metadata.Name},
			} {
				if strings.TrimSpace(f.value) == "" {
					t.Errorf("%s: no %s", d.where, f.field)
				}
			}
		})
	}
	kinds := byKind(docs)
	for _, kind := range []string{"Deployment", "Service", "Secret"} {
		if len(kinds[kind]) == 0 {
			t.Errorf("docs/k8s has no %s", kind)
		}
	}
	known := serveFlags(t)
	for _, d := range kinds["Deployment"] {
		checks, err := checkDeployment(d, kinds, known)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		for _, ck := range checks {
			t.Run(d.where+"/"+ck.name, func(t *testing.T) {
				for _, p := range ck.problems {
					t.Errorf("%s: %s", d.where, p)
				}
			})
		}
	}
}

// TestK8sChecksCatchMistakes: each check of TestK8sManifests fails on the
// mistake it is there for, made in a copy of the real manifests.
func TestK8sChecksCatchMistakes(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(k8sDir, "*.yaml"))
	texts := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[filepath.Base(f)] = string(b)
	}
	known := serveFlags(t)
	mistakes := []struct {
		name, file, old, new string
		problem              string // part of the problem the checks must find
	}{
		{"one replica", "deployment.yaml", "replicas: 2", "replicas: 1", "spec.replicas must be 2 or more"},
		{"an unknown flag", "deployment.yaml", "- --shutdown-grace", "- --no-such-flag\n            - x\n            - --shutdown-grace", "--no-such-flag is not a flag of toolhost serve"},
		{"a flag without its value", "deployment.yaml", "            - 30s\n", "", "--shutdown-grace needs a value"},
		{"a liveness probe on /readyz", "deployment.yaml", "path: /healthz\n              port: http\n            periodSeconds: 10", "path: /readyz\n              port: http\n            periodSeconds: 10", "livenessProbe asks /readyz, want /healthz"},
		{"a readiness probe on another path", "deployment.yaml", "path: /readyz", "path: /ready", "readinessProbe asks /ready, want /readyz"},
		{"a probe on another port", "deployment.yaml", "path: /readyz\n              port: http", "path: /readyz\n              port: 9090", "readinessProbe asks port 9090"},
		{"loopback only", "deployment.yaml", "0.0.0.0:8080", "127.0.0.1:8080", "listens on loopback only"},
		{"a grace as long as serve's", "deployment.yaml", "terminationGracePeriodSeconds: 60", "terminationGracePeriodSeconds: 30", "it must exceed 50s"},
		{"a longer --shutdown-grace", "deployment.yaml", "            - 30s\n", "            - 2m\n", "it must exceed 2m20s"},
		{"the database in the manifest", "deployment.yaml", "valueFrom:\n                secretKeyRef:\n                  name: toolhost-db\n                  key: TOOLHOST_DB", `value: "postgres://u:p@db/toolhost"`, "must come from a secretKeyRef"},
		{"a Secret that is not there", "secret.yaml", "name: toolhost-db", "name: another-secret", `no Secret "toolhost-db" with key "TOOLHOST_DB"`},
		{"--data on the image's disk", "deployment.yaml", "emptyDir:\n            sizeLimit: 20Gi", "hostPath:\n            path: /srv/toolhost", "is not an emptyDir"},
		{"a Service that selects nothing", "service.yaml", "  selector:\n    app.kubernetes.io/name: toolhost", "  selector:\n    app.kubernetes.io/name: other", "does not select the pods"},
		{"a Service on another port", "service.yaml", "targetPort: http", "targetPort: 9090", "targetPort 9090 is not the serve port"},
	}
	for _, m := range mistakes {
		t.Run(m.name, func(t *testing.T) {
			if !strings.Contains(texts[m.file], m.old) {
				t.Fatalf("docs/k8s/%s no longer holds %q: update this case", m.file, m.old)
			}
			var docs []*k8sDoc
			for name, text := range texts {
				if name == m.file {
					text = strings.Replace(text, m.old, m.new, 1)
				}
				ds, err := parseK8s(name, []byte(text))
				if err != nil {
					t.Fatal(err)
				}
				docs = append(docs, ds...)
			}
			kinds := byKind(docs)
			var all []string
			for _, d := range kinds["Deployment"] {
				checks, err := checkDeployment(d, kinds, known)
				if err != nil {
					all = append(all, err.Error())
				}
				for _, ck := range checks {
					all = append(all, ck.problems...)
				}
			}
			found := false
			for _, p := range all {
				found = found || strings.Contains(p, m.problem)
			}
			if !found {
				t.Errorf("no check found %q; the checks said:\n%s", m.problem, strings.Join(all, "\n"))
			}
		})
	}
}

// byKind groups documents by their kind.
func byKind(docs []*k8sDoc) map[string][]*k8sDoc {
	out := map[string][]*k8sDoc{}
	for _, d := range docs {
		out[d.head.Kind] = append(out[d.head.Kind], d)
	}
	return out
}

// deployCheck is one check of a Deployment and what it found wrong.
type deployCheck struct {
	name     string
	problems []string
}

// checkDeployment checks a Deployment against toolhost serve's flags
// (known), the other manifests (kinds) and serve's drain.
func checkDeployment(d *k8sDoc, kinds map[string][]*k8sDoc, known map[string]serveFlag) ([]deployCheck, error) {
	var dep k8sDeployment
	if err := d.node.Decode(&dep); err != nil {
		return nil, fmt.Errorf("%s: %w", d.where, err)
	}
	podSpec := dep.Spec.Template.Spec
	var c k8sContainer
	var sc serveCommand
	found := false
	for _, cc := range podSpec.Containers {
		if s, ok := parseServe(cc, known); ok {
			c, sc, found = cc, s, true
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("%s: no container runs toolhost serve", d.where)
	}
	_, servePort, addrErr := net.SplitHostPort(sc.flagOr("addr", known))
	checks := []struct {
		name  string
		check func() []string
	}{
		{"two replicas or more", func() []string {
			if dep.Spec.Replicas == nil || *dep.Spec.Replicas < 2 {
				return []string{"spec.replicas must be 2 or more: one node is not a service of several nodes"}
			}
			return nil
		}},
		{"the selector matches the pods", func() []string {
			if len(dep.Spec.Selector.MatchLabels) == 0 || !labelsWithin(dep.Spec.Selector.MatchLabels, dep.Spec.Template.Metadata.Labels) {
				return []string{"spec.selector.matchLabels must be among the pod template's labels"}
			}
			return nil
		}},
		{"every argument is a serve flag", func() []string { return sc.problems }},
		{"TOOLHOST_DB comes from a Secret in docs/k8s", func() []string {
			for _, e := range c.Env {
				if e.Name != "TOOLHOST_DB" {
					continue
				}
				if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
					return []string{"TOOLHOST_DB must come from a secretKeyRef, never a value in the manifest"}
				}
				ref := e.ValueFrom.SecretKeyRef
				for _, s := range kinds["Secret"] {
					var sec k8sSecret
					if s.head.Metadata.Name != ref.Name || s.head.Metadata.Namespace != d.head.Metadata.Namespace || s.node.Decode(&sec) != nil {
						continue
					}
					if _, ok := sec.StringData[ref.Key]; ok {
						return nil
					}
					if _, ok := sec.Data[ref.Key]; ok {
						return nil
					}
				}
				return []string{fmt.Sprintf("no Secret %q with key %q in namespace %q in docs/k8s", ref.Name, ref.Key, d.head.Metadata.Namespace)}
			}
			return []string{"the container has no TOOLHOST_DB"}
		}},
		{"--data is an emptyDir", func() []string {
			data, ok := sc.flags["data"]
			if !ok {
				return []string{"serve must be given --data (its default, ./data, is relative to the image's working folder)"}
			}
			for _, m := range c.VolumeMounts {
				if m.MountPath != data {
					continue
				}
				for _, v := range podSpec.Volumes {
					if v.Name == m.Name && v.EmptyDir != nil {
						return nil
					}
				}
				return []string{fmt.Sprintf("the volume %q mounted at --data %s is not an emptyDir", m.Name, data)}
			}
			return []string{fmt.Sprintf("nothing is mounted at --data %s", data)}
		}},
		{"--addr listens on the container port", func() []string {
			host, port, err := net.SplitHostPort(sc.flagOr("addr", known))
			if err != nil {
				return []string{fmt.Sprintf("--addr: %v", err)}
			}
			var out []string
			if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
				out = append(out, fmt.Sprintf("--addr %s listens on loopback only: neither the probes nor the Service reach it", net.JoinHostPort(host, port)))
			}
			if _, ok := containerPort(c, port); !ok {
				out = append(out, fmt.Sprintf("--addr port %s is not a containerPort", port))
			}
			return out
		}},
		{"probes ask /healthz and /readyz on the serve port", func() []string {
			want := []struct {
				name, path string
				p          *k8sProbe
				required   bool
			}{
				{"livenessProbe", "/healthz", c.LivenessProbe, true},
				{"readinessProbe", "/readyz", c.ReadinessProbe, true},
				{"startupProbe", "/healthz", c.StartupProbe, false},
			}
			var out []string
			for _, w := range want {
				switch {
				case w.p == nil && w.required:
					out = append(out, "no "+w.name)
				case w.p == nil:
				case w.p.HTTPGet == nil:
					out = append(out, w.name+" is not an httpGet")
				case w.p.HTTPGet.Path != w.path:
					out = append(out, fmt.Sprintf("%s asks %s, want %s", w.name, w.p.HTTPGet.Path, w.path))
				default:
					if n, ok := containerPort(c, fmt.Sprint(w.p.HTTPGet.Port)); addrErr != nil || !ok || strconv.Itoa(n) != servePort {
						out = append(out, fmt.Sprintf("%s asks port %v, where serve does not listen (--addr port %s)", w.name, w.p.HTTPGet.Port, servePort))
					}
				}
			}
			return out
		}},
		{"terminationGracePeriodSeconds outlasts the drain", func() []string {
			grace, err := time.ParseDuration(sc.flagOr("shutdown-grace", known))
			if err != nil {
				return []string{fmt.Sprintf("--shutdown-grace: %v", err)}
			}
			pause := preStopPause(c)
			need := pause + grace + drainTail
			got := podSpec.TerminationGracePeriodSeconds
			if got == nil || time.Duration(*got)*time.Second <= need {
				have := "Kubernetes' default of 30"
				if got != nil {
					have = strconv.Itoa(*got)
				}
				return []string{fmt.Sprintf("terminationGracePeriodSeconds is %s; it must exceed %s: the preStop pause %s + --shutdown-grace %s + %s that serve may take after the grace",
					have, need, pause, grace, drainTail)}
			}
			return nil
		}},
		// The Service and the PodDisruptionBudget select these pods; the
		// Service sends traffic to the serve port.
		{"the Service and the PodDisruptionBudget select its pods", func() []string {
			var out []string
			for _, kind := range []string{"Service", "PodDisruptionBudget"} {
				for _, o := range kinds[kind] {
					var s k8sSelecting
					if err := o.node.Decode(&s); err != nil {
						out = append(out, fmt.Sprintf("%s: %v", o.where, err))
						continue
					}
					sel := selectorLabels(s.Spec.Selector)
					if len(sel) == 0 || !labelsWithin(sel, dep.Spec.Template.Metadata.Labels) {
						out = append(out, fmt.Sprintf("%s: its selector %v does not select the pods", o.where, s.Spec.Selector))
					}
					for _, p := range s.Spec.Ports {
						if n, ok := containerPort(c, fmt.Sprint(p.TargetPort)); addrErr != nil || !ok || strconv.Itoa(n) != servePort {
							out = append(out, fmt.Sprintf("%s: targetPort %v is not the serve port %s", o.where, p.TargetPort, servePort))
						}
					}
				}
			}
			return out
		}},
	}
	var out []deployCheck
	for _, ck := range checks {
		var problems []string
		for _, p := range ck.check() {
			problems = append(problems, fmt.Sprintf("container %q: %s", c.Name, p))
		}
		out = append(out, deployCheck{ck.name, problems})
	}
	return out, nil
}

// TestProbeRoutes: the paths the manifests' probes ask are answered by the
// API's own routing as docs/deploy.md says: /healthz 200 always, /readyz
// 200 until the server drains, then 503.
func TestProbeRoutes(t *testing.T) {
	db, err := storage.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// /readyz asks the store too (issue 27): a real SQLite one here.
	srv := &api.Server{DB: db, Calls: &calls.Service{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	h := srv.Handler()
	get := func(path string) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code
	}
	steps := []struct {
		name  string
		drain bool
		path  string
		code  int
	}{
		{"liveness", false, "/healthz", http.StatusOK},
		{"readiness", false, "/readyz", http.StatusOK},
		{"not a route", false, "/readyz/", http.StatusNotFound},
		{"readiness while draining", true, "/readyz", http.StatusServiceUnavailable},
		{"liveness while draining", true, "/healthz", http.StatusOK},
	}
	for _, st := range steps {
		if st.drain {
			srv.Drain()
		}
		if code := get(st.path); code != st.code {
			t.Errorf("%s: GET %s answered %d, want %d", st.name, st.path, code, st.code)
		}
	}
}

// containerPort resolves a probe's or a Service's port (a number or a
// port name) to one of the container's ports.
func containerPort(c k8sContainer, port string) (int, bool) {
	for _, p := range c.Ports {
		if p.Name != "" && p.Name == port || strconv.Itoa(p.ContainerPort) == port {
			return p.ContainerPort, true
		}
	}
	return 0, false
}

// preStopPause is how long a preStop hook of "sleep N" (exec or the sleep
// action) holds the SIGTERM back.
func preStopPause(c k8sContainer) time.Duration {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return 0
	}
	ps := c.Lifecycle.PreStop
	if ps.Sleep != nil {
		return time.Duration(ps.Sleep.Seconds) * time.Second
	}
	if ps.Exec != nil && len(ps.Exec.Command) == 2 && filepath.Base(ps.Exec.Command[0]) == "sleep" {
		if d, err := time.ParseDuration(ps.Exec.Command[1] + "s"); err == nil {
			return d
		}
	}
	return 0
}

// selectorLabels reads a Service's selector (labels) or a
// PodDisruptionBudget's (matchLabels).
func selectorLabels(sel any) map[string]string {
	m, ok := sel.(map[string]any)
	if !ok {
		return nil
	}
	if ml, ok := m["matchLabels"].(map[string]any); ok {
		m = ml
	}
	out := map[string]string{}
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// labelsWithin reports whether every label of sel is among labels.
func labelsWithin(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

package cli

import (
	"fmt"
	"os"
	"strings"

	"toolhost/core/definition"
	"toolhost/core/schema"
	"toolhost/core/suggest"
)

func runSchema(env *Env, args []string) int {
	fs := newFlags(env, "schema")
	dialect := fs.String("dialect", string(schema.JSONSchema), "`D`ialect: jsonschema, openai, openai-strict, anthropic, gemini or mcp")
	pos, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) < 1 {
		fmt.Fprintln(env.Stderr, "toolhost schema: want GROUP.yaml")
		fs.Usage()
		return ExitUsage
	}
	d, err := schema.ParseDialect(*dialect)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost schema: %v\n", err)
		return ExitUsage
	}
	file := pos[0]
	src, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost schema: %v\n", err)
		return ExitUsage
	}
	if definition.Kind(src) == "Agent" {
		fmt.Fprintf(env.Stderr, "toolhost schema: %s is an agent (kind: Agent); schema prints the tool schemas of a tool group (kind: Plugin): give it a group's definition, or check the agent with toolhost validate %s\n", file, file)
		return ExitUsage
	}
	res := definition.Load(src)
	if !res.OK() {
		printDiagnostics(env.Stderr, file, res.Errors, nil)
		fmt.Fprintf(env.Stderr, "toolhost schema: %s is invalid (%s)\n", file, plural(len(res.Errors), "error"))
		return ExitFailure
	}
	tools := res.Group.Tools
	if names := pos[1:]; len(names) > 0 {
		tools = nil
		bad := false
		for _, n := range names {
			t := findTool(res.Group, n)
			if t == nil {
				// Every bad name is reported, each with what it is.
				bad = true
				if s := findSkill(res.Group, n); s != nil {
					fmt.Fprintf(env.Stderr, "toolhost schema: %q is a skill of %s: skills run by themselves and have no tool schema\n", n, file)
					continue
				}
				fmt.Fprintf(env.Stderr, "toolhost schema: no tool %q in %s%s\n", n, file, suggest.DidYouMean(n, toolNames(res.Group)))
				continue
			}
			tools = append(tools, t)
		}
		if bad {
			return ExitFailure
		}
	}
	out, err := schema.Tools(res.Group.Name, tools, d)
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(env.Stderr, "toolhost schema: %s\n", line)
		}
		return ExitFailure
	}
	data, err := schema.MarshalTools(out)
	if err != nil {
		fmt.Fprintf(env.Stderr, "toolhost schema: %v\n", err)
		return ExitFailure
	}
	fmt.Fprintf(env.Stdout, "%s\n", data)
	return ExitOK
}

// findTool finds a tool of g by object_name, then by name, then among the
// built-in tools by object_name.
func findTool(g *definition.Group, name string) *definition.Tool {
	if t := g.Tool(name); t != nil {
		return t
	}
	for _, t := range g.Tools {
		if t.Name == name {
			return t
		}
	}
	return definition.Builtin(name)
}

func toolNames(g *definition.Group) []string {
	var names []string
	for _, t := range g.Tools {
		names = append(names, t.ObjectName, t.Name)
	}
	for _, t := range definition.Builtins() {
		names = append(names, t.ObjectName)
	}
	return names
}

// findSkill finds a skill by name.
func findSkill(g *definition.Group, name string) *definition.Skill {
	for _, s := range g.Skills {
		if s.Name == name {
			return s
		}
	}
	return nil
}

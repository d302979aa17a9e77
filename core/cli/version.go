package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"toolhost/core/api"
)

// VersionInfo is what toolhost version prints: the build's module version
// and VCS revision, as runtime/debug.ReadBuildInfo reports them, and the Go
// toolchain that built it.
type VersionInfo struct {
	// Version is the short form the server reports too (api.Version):
	// the module version, or devel+REVISION for a build from a checkout.
	Version string `json:"version"`
	// Module is the main module's path and ModuleVersion its version as
	// the build recorded it ("(devel)" for a build from a checkout).
	Module        string `json:"module"`
	ModuleVersion string `json:"module_version"`
	// Revision, RevisionTime and Modified are the VCS stamp: the commit,
	// its time, and whether the work tree had uncommitted changes.
	Revision     string `json:"revision,omitempty"`
	RevisionTime string `json:"revision_time,omitempty"`
	Modified     bool   `json:"modified"`
	// Go is the Go version that built the binary; Platform its GOOS/GOARCH.
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// BuildVersion reads the running binary's VersionInfo.
func BuildVersion() VersionInfo {
	v := VersionInfo{Version: api.Version(), Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Module, v.ModuleVersion = bi.Main.Path, bi.Main.Version
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.RevisionTime = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func runVersion(env *Env, args []string) int {
	fs := newFlags(env, "version")
	asJSON := fs.Bool("json", false, "print the version as a JSON object")
	pos, code, ok := parse(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		fmt.Fprintf(env.Stderr, "toolhost version: takes no arguments, got %q\n", pos[0])
		return ExitUsage
	}
	v := BuildVersion()
	if *asJSON {
		b, _ := json.MarshalIndent(v, "", "  ")
		fmt.Fprintf(env.Stdout, "%s\n", b)
		return ExitOK
	}
	fmt.Fprintf(env.Stdout, "toolhost %s\n", v.Version)
	if v.Revision != "" {
		mod := ""
		if v.Modified {
			mod = " (with uncommitted changes)"
		}
		fmt.Fprintf(env.Stdout, "  revision  %s %s%s\n", v.Revision, v.RevisionTime, mod)
	}
	if v.Module != "" {
		fmt.Fprintf(env.Stdout, "  module    %s %s\n", v.Module, v.ModuleVersion)
	}
	fmt.Fprintf(env.Stdout, "  go        %s %s\n", v.Go, v.Platform)
	return ExitOK
}

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"toolhost/plugins"
	"toolhost/plugins/cgroupfs"
)

// settleCgroups places a new sandbox in its cgroups on cgroup v2 (see
// plugins.CgroupV2): Launch calls it once init exists and before init has
// its configuration. On cgroup v1 it does nothing: the launcher joined
// the sandbox's cgroups before init started, and the plugin process moves
// each worker into the workers' pids cgroup by its own uid. When the
// sandbox cannot be placed, init (p) is killed and the launcher fails.
func settleCgroups(cfg *plugins.SandboxConfig, p *os.Process) {
	if cfg.CgroupV2 == nil {
		return
	}
	if err := settleV2(cfg.CgroupV2, cfg.WorkerCgroup); err != nil {
		p.Kill()
		fail("%v", err)
	}
}

// settleV2 moves every process of the sandbox's top cgroup into its init
// cgroup (init, and rootless its holder; the launcher itself), enables the
// controllers the workers' limits need for the top's children, and sets
// those limits on workers.
func settleV2(c *plugins.CgroupV2, workers string) error {
	initDir := filepath.Join(c.Top, "init")
	for pass := 0; ; pass++ {
		pids := cgroupfs.Procs(c.Top)
		if len(pids) == 0 {
			break
		}
		if pass == 20 {
			return fmt.Errorf("processes keep appearing in the sandbox's cgroup %s", c.Top)
		}
		for _, pid := range pids {
			err := os.WriteFile(filepath.Join(initDir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
			if err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("move the sandbox's process %d into %s: %w", pid, initDir, err)
			}
		}
	}
	if workers == "" {
		return nil
	}
	// Only the controllers given to the sandbox's cgroup can be enabled for
	// its children; the core's probe reports the others missing.
	avail := cgroupfs.Controllers(c.Top)
	var enable []string
	for _, ctl := range []string{"pids", "memory"} {
		if avail[ctl] {
			enable = append(enable, "+"+ctl)
		}
	}
	if len(enable) > 0 {
		if err := writeCgroupFile(c.Top, "cgroup.subtree_control", strings.Join(enable, " ")); err != nil {
			return err
		}
	}
	settings := []struct {
		ctl, file, value string
		skip, optional   bool
	}{
		{"pids", "pids.max", strconv.Itoa(c.WorkerPids), c.WorkerPids <= 0, false},
		{"memory", "memory.max", strconv.FormatInt(c.WorkerMemoryBytes, 10), c.WorkerMemoryBytes <= 0, false},
		// Present only where the kernel accounts swap.
		{"memory", "memory.swap.max", "0", false, true},
		// An out-of-memory kill among the workers takes them all: none
		// is left with half of what a call had started.
		{"memory", "memory.oom.group", "1", false, false},
	}
	for _, s := range settings {
		if !avail[s.ctl] || s.skip {
			continue
		}
		if _, err := os.Stat(filepath.Join(workers, s.file)); err != nil && s.optional {
			continue
		}
		if err := writeCgroupFile(workers, s.file, s.value); err != nil {
			return err
		}
	}
	return nil
}

func writeCgroupFile(dir, file, value string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
		return fmt.Errorf("set %s of the cgroup %s to %s: %w", file, dir, value, err)
	}
	return nil
}

// CgroupProbe is "toolhost sandbox-cgroup-probe", the command of the
// probe's cgroup sandbox: it runs as the sandbox's tool user, starts a
// process of its own and moves it into the workers' cgroups as the plugin
// process moves each worker (the cgroup folders named by
// EnvWorkerCgroup and EnvWorkerMemoryCgroup), then prints a
// plugins.CgroupProbeReport. It never returns.
func CgroupProbe() {
	if len(os.Args) > 2 && os.Args[2] == "child" {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	rep := plugins.CgroupProbeReport{UID: os.Getuid()}
	self, _ := os.ReadFile("/proc/self/cgroup")
	rep.Self = string(self)
	child := exec.Command(plugins.SandboxExe, plugins.EntryCgroupProbe, "child")
	child.Env = []string{}
	hold, err := child.StdinPipe()
	if err == nil {
		err = child.Start()
	}
	if err != nil {
		rep.Error = fmt.Sprintf("start a process: %v", err)
	} else {
		for _, env := range []string{plugins.EnvWorkerCgroup, plugins.EnvWorkerMemoryCgroup} {
			cg := os.Getenv(env)
			if cg == "" || rep.Error != "" {
				continue
			}
			if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(child.Process.Pid)), 0); err != nil {
				rep.Error = err.Error()
			}
		}
		moved, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", child.Process.Pid))
		rep.Moved = string(moved)
		hold.Close()
		child.Wait()
	}
	json.NewEncoder(os.Stdout).Encode(rep)
	os.Exit(0)
}

package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"

	"toolhost/plugins"
	"toolhost/plugins/service"
)

// callbackRoot holds, for each sandboxed plugin process, the folder that
// go-plugin makes for its broker's sockets: one folder of this server's
// below toolhost-cb of the runtime folder (/run as root, the user's own
// rootless: plugins.RuntimeDir), owned by the host and never shown to a
// sandbox (nothing uses the broker: toolhost.call_tool comes back over the
// data channel).
func callbackRoot() (string, error) {
	dir, err := plugins.RuntimeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "toolhost-cb", strconv.Itoa(os.Getpid())), nil
}

// launch is how one plugin process is started: its command, its sandbox's
// cgroups and configuration (nil without a sandbox).
type launch struct {
	cmd *exec.Cmd
	cg  *sandboxCgroups
	cfg *plugins.SandboxConfig
	// tlsEnv is service.EnvTLS for the plugin process.
	tlsEnv string
	// data is the plugin's end of its data channel (plugins/channel),
	// closed here once the process has its copy.
	data *os.File
}

// clientConfig is go-plugin's configuration for the launch: the process is
// started by pluginRunner, and under a sandbox the broker's (unused)
// socket folder is made in callbackRoot.
func (l *launch) clientConfig(stderr io.Writer) (*goplugin.ClientConfig, error) {
	tlsConfig, tlsEnv, err := service.NewTLS()
	if err != nil {
		return nil, fmt.Errorf("make the plugin's certificates: %w", err)
	}
	l.tlsEnv = tlsEnv
	cc := &goplugin.ClientConfig{
		HandshakeConfig:  service.Handshake,
		Plugins:          service.PluginMap(nil),
		SkipHostEnv:      true,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		TLSConfig:        tlsConfig,
		Managed:          true,
		Stderr:           stderr,
		StartTimeout:     30 * time.Second,
		Logger:           hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off}),
		RunnerFunc:       l.runner,
	}
	if l.cfg != nil {
		root, err := callbackRoot()
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(root, 0o700); err != nil {
			return nil, fmt.Errorf("make the callback folder: %w", err)
		}
		cc.UnixSocketConfig = &goplugin.UnixSocketConfig{TempDir: root}
	}
	return cc, nil
}

// runner is go-plugin's RunnerFunc: spec carries go-plugin's environment.
func (l *launch) runner(_ hclog.Logger, spec *exec.Cmd, _ string) (runner.Runner, error) {
	l.cmd.Env = append(l.cmd.Env, spec.Env...)
	r := &pluginRunner{cmd: l.cmd}
	if l.cg != nil && !l.cg.v2 {
		// On cgroup v2 the launcher moves itself on from the cgroup it
		// joins (settleV2): a late write of the core's could move it back.
		r.join = l.cg.join()
	}
	if l.cfg == nil {
		// The plugin process itself: its environment is its own.
		l.cmd.Env = append(l.cmd.Env, service.EnvTLS+"="+l.tlsEnv)
		if l.data != nil {
			l.cmd.ExtraFiles = []*os.File{l.data}
			l.cmd.Env = append(l.cmd.Env, plugins.EnvDataFD+"=3")
		}
	} else {
		// The sandbox's launcher runs on the host: the plugin's key reaches
		// it on a pipe, never in its environment (/proc/PID/environ).
		pr, pw, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		_, err = pw.Write([]byte(service.EnvTLS + "=" + l.tlsEnv + "\x00"))
		pw.Close()
		if err != nil {
			pr.Close()
			return nil, err
		}
		l.cmd.ExtraFiles = []*os.File{pr}
		l.cmd.Env = append(l.cmd.Env, plugins.EnvSandboxSecrets+"=3")
		if l.data != nil {
			l.cmd.ExtraFiles = append(l.cmd.ExtraFiles, l.data)
			l.cmd.Env = append(l.cmd.Env, plugins.EnvDataFD+"=4")
		}
	}
	if l.cfg != nil {
		data, err := json.Marshal(l.cfg)
		if err != nil {
			return nil, err
		}
		for i, kv := range l.cmd.Env {
			if strings.HasPrefix(kv, plugins.EnvSandbox+"=") {
				l.cmd.Env[i] = plugins.EnvSandbox + "=" + string(data)
			}
		}
	}
	return r, nil
}

// pluginRunner starts and stops the plugin process for go-plugin. It never
// hands the plugin process the host's stdin.
type pluginRunner struct {
	cmd            *exec.Cmd
	stdout, stderr io.ReadCloser
	// join are the sandbox's v1 cgroups, which the launcher joins first
	// thing: Start moves it there as soon as it runs, so that its own
	// start (a Go runtime's, about 7 ms of CPU here) is counted in them
	// (its tenant's weight, idle for a background start) and not beside
	// the server, where it competed with every sandbox at once (issue 25).
	join []string
}

// launcherStarted, when set (tests), is called with the launcher's pid
// once Start has moved it.
var launcherStarted func(pid int)

// Start implements runner.Runner.
func (r *pluginRunner) Start(context.Context) error {
	var err error
	if r.stdout, err = r.cmd.StdoutPipe(); err != nil {
		return err
	}
	if r.stderr, err = r.cmd.StderrPipe(); err != nil {
		return err
	}
	err = r.cmd.Start()
	for _, f := range r.cmd.ExtraFiles {
		f.Close() // the child has its own copies
	}
	if err != nil {
		return err
	}
	moveLauncher(r.cmd.Process.Pid, r.join)
	return nil
}

// moveLauncher moves a launcher just started (pid) into its sandbox's v1
// cgroups (join; pluginRunner.join). Not yet waited for, the launcher's
// pid is its own. A failure here is the launcher's to report, when it
// joins the same cgroups.
func moveLauncher(pid int, join []string) {
	for _, d := range join {
		os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
	}
	if launcherStarted != nil {
		launcherStarted(pid)
	}
}

// Diagnose implements runner.Runner.
func (r *pluginRunner) Diagnose(context.Context) string { return "" }

// Stdout implements runner.Runner.
func (r *pluginRunner) Stdout() io.ReadCloser { return r.stdout }

// Stderr implements runner.Runner.
func (r *pluginRunner) Stderr() io.ReadCloser { return r.stderr }

// Name implements runner.Runner.
func (r *pluginRunner) Name() string { return r.cmd.Path }

// Wait implements runner.Runner.
func (r *pluginRunner) Wait(context.Context) error { return r.cmd.Wait() }

// Kill implements runner.Runner.
func (r *pluginRunner) Kill(context.Context) error {
	if r.cmd.Process == nil {
		return nil
	}
	if err := r.cmd.Process.Kill(); err != nil && err != os.ErrProcessDone {
		return err
	}
	return nil
}

// ID implements runner.Runner.
func (r *pluginRunner) ID() string {
	if r.cmd.Process == nil {
		return ""
	}
	return strconv.Itoa(r.cmd.Process.Pid)
}

// PluginToHost implements runner.AddrTranslator: the launcher already
// gives the plugin's own socket as the host reaches it.
func (r *pluginRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

// HostToPlugin implements runner.AddrTranslator (the broker is not used).
func (r *pluginRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

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

// callbackRoot holds, for each plugin process, the folder where the host
// listens for its toolhost.call_tool connections (go-plugin's broker): one
// folder of this server's below /run/toolhost-cb, mounted in the sandbox
// at plugins.SandboxCallbackDir. Tool code can connect to the host's socket
// there (it is the plugin's own way back) but cannot write in the folder.
func callbackRoot() string {
	return filepath.Join("/run/toolhost-cb", strconv.Itoa(os.Getpid()))
}

// launch is how one plugin process is started: its command, its sandbox's
// cgroups and configuration (nil without a sandbox).
type launch struct {
	cmd *exec.Cmd
	cg  *sandboxCgroups
	cfg *plugins.SandboxConfig
	// tlsEnv is service.EnvTLS for the plugin process.
	tlsEnv string
}

// clientConfig is go-plugin's configuration for the launch: the process is
// started by pluginRunner, and under a sandbox the broker's sockets are
// made in a folder the sandbox sees at a path of its own.
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
		root := callbackRoot()
		if err := os.MkdirAll(root, 0o711); err != nil {
			return nil, fmt.Errorf("make the callback folder: %w", err)
		}
		gid := os.Getgid()
		if l.cfg.Identity {
			gid = l.cfg.HostToolGID
		}
		cc.UnixSocketConfig = &goplugin.UnixSocketConfig{TempDir: root, Group: strconv.Itoa(gid)}
	}
	return cc, nil
}

// runner is go-plugin's RunnerFunc: spec carries go-plugin's environment
// and socketDir the folder of the broker's sockets.
func (l *launch) runner(_ hclog.Logger, spec *exec.Cmd, socketDir string) (runner.Runner, error) {
	l.cmd.Env = append(l.cmd.Env, spec.Env...)
	r := &pluginRunner{cmd: l.cmd}
	if l.cfg == nil {
		// The plugin process itself: its environment is its own.
		l.cmd.Env = append(l.cmd.Env, service.EnvTLS+"="+l.tlsEnv)
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
	}
	if l.cfg != nil && socketDir != "" {
		// The host makes the sockets; the sandbox may only reach them.
		if err := os.Chmod(socketDir, 0o750); err != nil {
			return nil, err
		}
		// Read-only: connecting to a socket needs no write access to its
		// mount.
		l.cfg.Binds = append(l.cfg.Binds, plugins.Bind{Source: socketDir, Target: plugins.SandboxCallbackDir})
		data, err := json.Marshal(l.cfg)
		if err != nil {
			return nil, err
		}
		for i, kv := range l.cmd.Env {
			if strings.HasPrefix(kv, plugins.EnvSandbox+"=") {
				l.cmd.Env[i] = plugins.EnvSandbox + "=" + string(data)
			}
		}
		r.hostDir, r.sandboxDir = socketDir, plugins.SandboxCallbackDir
	}
	return r, nil
}

// pluginRunner starts and stops the plugin process for go-plugin, and
// translates the broker's socket paths from the host's view to the
// sandbox's. It never hands the plugin process the host's stdin.
type pluginRunner struct {
	cmd                 *exec.Cmd
	stdout, stderr      io.ReadCloser
	hostDir, sandboxDir string
}

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
	return err
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

// HostToPlugin implements runner.AddrTranslator: a broker socket in the
// host's callback folder is, in the sandbox, in plugins.SandboxCallbackDir.
func (r *pluginRunner) HostToPlugin(network, addr string) (string, string, error) {
	if network == "unix" && r.hostDir != "" && strings.HasPrefix(addr, r.hostDir+"/") {
		return network, r.sandboxDir + strings.TrimPrefix(addr, r.hostDir), nil
	}
	return network, addr, nil
}

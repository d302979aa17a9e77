package cli

import (
	"context"
	"fmt"
	"io"
	"os/signal"
	"sync"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"toolhost/core/api"
	"toolhost/core/internal/watch"
	"toolhost/core/mcpserver"
	"toolhost/core/session"
	"toolhost/storage"
)

// runMCP serves one group or agent to an MCP client over stdio: the
// client (Claude Desktop, Cursor, the MCP Inspector) starts
// `toolhost mcp GROUP.yaml`, and the MCP session is a toolhost session of
// the agent (a group alone is served as `toolhost session` serves it: one
// state with its tools and the built-ins). Stdout carries nothing but
// protocol messages; the session's events go to stderr.
func runMCP(env *Env, args []string) int {
	ls, code := openLocalSession(env, "mcp", args)
	if ls == nil {
		return code
	}
	defer ls.close()
	var (
		hub watch.Hub
		mu  sync.Mutex // one call, change or finish at a time, as on the server
	)
	id := session.NewID()
	ls.eng.OnChange = func(s *storage.Session) { hub.Notify(s.ID) }
	cat := &mcpserver.SessionCatalog{
		ID:     id,
		Agent:  ls.eng.Agent.Name,
		Engine: func(context.Context) (*session.Engine, error) { return ls.eng, nil },
		In: func(ctx context.Context, id string, f func(context.Context, *storage.Session) error) error {
			mu.Lock()
			defer mu.Unlock()
			s, ok := ls.store.Session(id)
			if !ok {
				return fmt.Errorf("no session %q", id)
			}
			return f(ctx, s)
		},
		Changed: func() (<-chan struct{}, func()) { return hub.Watch(id) },
	}
	srv := mcpserver.NewServer(cat, mcpserver.Options{Version: api.Version(), Vars: ls.vars, SessionID: id})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err := srv.Run(ctx, &mcp.IOTransport{Reader: nopCloser{env.Stdin}, Writer: nopWriteCloser{env.Stdout}})
	// The client hung up (or a signal came): the session ends and its
	// finish skills run, as when an HTTP client closes its session.
	if ferr := cat.Finish(context.Background()); ferr != nil {
		fmt.Fprintf(env.Stderr, "toolhost mcp: %v\n", ferr)
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(env.Stderr, "toolhost mcp: %v\n", err)
		return ExitFailure
	}
	return ExitOK
}

// nopCloser and nopWriteCloser keep the transport from closing the
// command's stdin and stdout: they are the process's, not the session's.
type nopCloser struct{ io.Reader }

func (nopCloser) Close() error { return nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

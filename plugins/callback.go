package plugins

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// ToolCallRequest is tool code calling another tool through its host
// (toolhost.call_tool in Python).
type ToolCallRequest struct {
	// Tool is the name or object_name of the tool to call.
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
	// IdempotencyKey is optional.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Group, when set, is the group to look the tool up in; otherwise the
	// caller's own group comes first, then the tenant's other groups.
	Group string `json:"group,omitempty"`
	// Token is the CallRequest.Token of the call that made this request,
	// attached by the plugin process (never taken from tool code): the core
	// finds the caller's session and depth under it.
	Token string `json:"token,omitempty"`
}

// ToolCallResponse is the answer of such a call: the pipeline's answer as
// JSON, or why it could not run.
type ToolCallResponse struct {
	Answer json.RawMessage `json:"answer,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Callbacks is the service the core serves to its plugin process.
type Callbacks interface {
	CallTool(ctx context.Context, req *ToolCallRequest) (*ToolCallResponse, error)
}

const callbackService = "toolhost.HostCallbacks"

var callbackDesc = grpc.ServiceDesc{
	ServiceName: callbackService,
	HandlerType: (*Callbacks)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "CallTool", Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
		in := new(ToolCallRequest)
		if err := dec(in); err != nil {
			return nil, err
		}
		return srv.(Callbacks).CallTool(ctx, in)
	}}},
	Metadata: "plugins/callback.go",
}

// ServeCallbacks serves impl to the plugin process over go-plugin's broker
// and returns the id the plugin dials.
func ServeCallbacks(h Host, impl Callbacks) (uint32, bool) {
	c, ok := h.(*client)
	if !ok || c.broker == nil {
		return 0, false
	}
	id := c.broker.NextId()
	go c.broker.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
		s := grpc.NewServer(opts...)
		s.RegisterService(&callbackDesc, impl)
		return s
	})
	return id, true
}

// callbackClient calls the core's Callbacks.
type callbackClient struct{ conn *grpc.ClientConn }

func (c *callbackClient) CallTool(ctx context.Context, req *ToolCallRequest) (*ToolCallResponse, error) {
	out := new(ToolCallResponse)
	if err := c.conn.Invoke(ctx, "/"+callbackService+"/CallTool", req, out, grpc.CallContentSubtype(codecName)); err != nil {
		return nil, err
	}
	return out, nil
}

// DialCallbacks connects the plugin process to the core's Callbacks.
func DialCallbacks(broker *plugin.GRPCBroker, id uint32) (Callbacks, error) {
	conn, err := broker.Dial(id)
	if err != nil {
		return nil, err
	}
	return &callbackClient{conn: conn}, nil
}

// BrokerUser is a Host implementation that wants go-plugin's broker (to
// dial the core's Callbacks).
type BrokerUser interface {
	SetBroker(b *plugin.GRPCBroker)
}

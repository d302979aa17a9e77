package service

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"toolhost/plugins"
)

const callbackService = "toolhost.HostCallbacks"

var callbackDesc = grpc.ServiceDesc{
	ServiceName: callbackService,
	HandlerType: (*plugins.Callbacks)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "CallTool", Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
		in := new(plugins.ToolCallRequest)
		if err := dec(in); err != nil {
			return nil, err
		}
		return srv.(plugins.Callbacks).CallTool(ctx, in)
	}}},
	Metadata: "plugins/service/callback.go",
}

// ServeCallbacks serves impl to the plugin process over go-plugin's broker
// and returns the id the plugin dials.
func ServeCallbacks(h plugins.Host, impl plugins.Callbacks) (uint32, bool) {
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

// callbackClient calls the core's plugins.Callbacks.
type callbackClient struct{ conn *grpc.ClientConn }

func (c *callbackClient) CallTool(ctx context.Context, req *plugins.ToolCallRequest) (*plugins.ToolCallResponse, error) {
	out := new(plugins.ToolCallResponse)
	if err := c.conn.Invoke(ctx, "/"+callbackService+"/CallTool", req, out, grpc.CallContentSubtype(codecName)); err != nil {
		return nil, err
	}
	return out, nil
}

// DialCallbacks connects the plugin process to the core's plugins.Callbacks.
func DialCallbacks(broker *plugin.GRPCBroker, id uint32) (plugins.Callbacks, error) {
	conn, err := broker.Dial(id)
	if err != nil {
		return nil, err
	}
	return &callbackClient{conn: conn}, nil
}

// BrokerUser is a Host implementation that wants go-plugin's broker (to
// dial the core's plugins.Callbacks).
type BrokerUser interface {
	SetBroker(b *plugin.GRPCBroker)
}

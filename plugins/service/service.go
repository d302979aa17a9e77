// Package service is the go-plugin gRPC service between the core and its
// plugin process: the handshake, the plugin set, the client and server of
// plugins.Host (the process's lifecycle: load, describe, shut down). Calls
// do not go through it but over the data channel (plugins/channel). The
// messages themselves are in package plugins, which the sandbox's helper
// binary imports without gRPC.
package service

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"

	"toolhost/plugins"
)

// Handshake is the go-plugin handshake of toolhost's plugin process. A
// binary started without the cookie refuses to serve.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  plugins.ProtocolVersion,
	MagicCookieKey:   plugins.MagicCookieKey,
	MagicCookieValue: plugins.MagicCookieValue,
}

// PluginMap is the plugin set both sides pass to go-plugin. The server side
// sets Impl.
func PluginMap(impl plugins.Host) plugin.PluginSet {
	return plugin.PluginSet{plugins.PluginName: &GRPCPlugin{Impl: impl}}
}

// GRPCPlugin adapts plugins.Host to go-plugin's gRPC plugins.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl plugins.Host
}

// GRPCServer registers the service.
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	s.RegisterService(&serviceDesc, p.Impl)
	return nil
}

// GRPCClient returns a plugins.Host that calls the plugin.
func (p *GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (interface{}, error) {
	return &client{conn: c}, nil
}

// codecName is the content subtype of the JSON codec.
const codecName = "json"

// jsonCodec encodes the messages with encoding/json.
type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error)      { return json.Marshal(v) }
func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
func (jsonCodec) Name() string                       { return codecName }

func init() { encoding.RegisterCodec(jsonCodec{}) }

const serviceName = "toolhost.PyHost"

var serviceDesc = grpc.ServiceDesc{
	ServiceName: serviceName,
	HandlerType: (*plugins.Host)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Load", Handler: unary(plugins.Host.Load)},
		{MethodName: "Describe", Handler: unary(plugins.Host.Describe)},
		{MethodName: "Shutdown", Handler: unary(plugins.Host.Shutdown)},
	},
	Metadata: "plugins/service/service.go",
}

// unary makes a gRPC method handler of a plugins.Host method.
func unary[Req, Resp any](m func(plugins.Host, context.Context, *Req) (*Resp, error)) func(any, context.Context, func(any) error, grpc.UnaryServerInterceptor) (any, error) {
	return func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
		in := new(Req)
		if err := dec(in); err != nil {
			return nil, err
		}
		h := srv.(plugins.Host)
		if icpt == nil {
			return m(h, ctx, in)
		}
		info := &grpc.UnaryServerInfo{Server: srv, FullMethod: serviceName}
		return icpt(ctx, in, info, func(ctx context.Context, req any) (any, error) {
			return m(h, ctx, req.(*Req))
		})
	}
}

// client is the plugins.Host the core holds: every method is one gRPC call.
type client struct {
	conn *grpc.ClientConn
}

func invoke[Req, Resp any](ctx context.Context, c *client, method string, in *Req) (*Resp, error) {
	out := new(Resp)
	if err := c.conn.Invoke(ctx, "/"+serviceName+"/"+method, in, out, grpc.CallContentSubtype(codecName)); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *client) Load(ctx context.Context, req *plugins.LoadRequest) (*plugins.LoadResponse, error) {
	return invoke[plugins.LoadRequest, plugins.LoadResponse](ctx, c, "Load", req)
}

func (c *client) Describe(ctx context.Context, req *plugins.Empty) (*plugins.LoadResponse, error) {
	return invoke[plugins.Empty, plugins.LoadResponse](ctx, c, "Describe", req)
}

func (c *client) Shutdown(ctx context.Context, req *plugins.Empty) (*plugins.Empty, error) {
	return invoke[plugins.Empty, plugins.Empty](ctx, c, "Shutdown", req)
}

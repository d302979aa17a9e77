package plugins

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
)

// Handshake is the go-plugin handshake of toolhost's plugin process. A
// binary started without the cookie refuses to serve.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "TOOLHOST_PYHOST_COOKIE",
	MagicCookieValue: "9f1c2d7e-toolhost-pyhost",
}

// PluginName is the key of the plugin in go-plugin's plugin set.
const PluginName = "pyhost"

// Host is the service the plugin process serves: it holds one group.
type Host interface {
	// Load imports the group's modules and describes its callables.
	Load(ctx context.Context, req *LoadRequest) (*LoadResponse, error)
	// Describe returns the signatures of the loaded group's callables.
	Describe(ctx context.Context, req *Empty) (*LoadResponse, error)
	// Call runs one callable.
	Call(ctx context.Context, req *CallRequest) (*CallResponse, error)
	// Shutdown stops every worker; the process exits after answering.
	Shutdown(ctx context.Context, req *Empty) (*Empty, error)
}

// PluginMap is the plugin set both sides pass to go-plugin. The server side
// sets Impl.
func PluginMap(impl Host) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &GRPCPlugin{Impl: impl}}
}

// GRPCPlugin adapts Host to go-plugin's gRPC plugins.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Host
}

// GRPCServer registers the service.
func (p *GRPCPlugin) GRPCServer(b *plugin.GRPCBroker, s *grpc.Server) error {
	if u, ok := p.Impl.(BrokerUser); ok {
		u.SetBroker(b)
	}
	s.RegisterService(&serviceDesc, p.Impl)
	return nil
}

// GRPCClient returns a Host that calls the plugin.
func (p *GRPCPlugin) GRPCClient(_ context.Context, b *plugin.GRPCBroker, c *grpc.ClientConn) (interface{}, error) {
	return &client{conn: c, broker: b}, nil
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
	HandlerType: (*Host)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Load", Handler: unary(Host.Load)},
		{MethodName: "Describe", Handler: unary(Host.Describe)},
		{MethodName: "Call", Handler: unary(Host.Call)},
		{MethodName: "Shutdown", Handler: unary(Host.Shutdown)},
	},
	Metadata: "plugins/service.go",
}

// unary makes a gRPC method handler of a Host method.
func unary[Req, Resp any](m func(Host, context.Context, *Req) (*Resp, error)) func(any, context.Context, func(any) error, grpc.UnaryServerInterceptor) (any, error) {
	return func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
		in := new(Req)
		if err := dec(in); err != nil {
			return nil, err
		}
		h := srv.(Host)
		if icpt == nil {
			return m(h, ctx, in)
		}
		info := &grpc.UnaryServerInfo{Server: srv, FullMethod: serviceName}
		return icpt(ctx, in, info, func(ctx context.Context, req any) (any, error) {
			return m(h, ctx, req.(*Req))
		})
	}
}

// client is the Host the core holds: every method is one gRPC call.
type client struct {
	conn   *grpc.ClientConn
	broker *plugin.GRPCBroker
}

func invoke[Req, Resp any](ctx context.Context, c *client, method string, in *Req) (*Resp, error) {
	out := new(Resp)
	if err := c.conn.Invoke(ctx, "/"+serviceName+"/"+method, in, out, grpc.CallContentSubtype(codecName)); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *client) Load(ctx context.Context, req *LoadRequest) (*LoadResponse, error) {
	return invoke[LoadRequest, LoadResponse](ctx, c, "Load", req)
}

func (c *client) Describe(ctx context.Context, req *Empty) (*LoadResponse, error) {
	return invoke[Empty, LoadResponse](ctx, c, "Describe", req)
}

func (c *client) Call(ctx context.Context, req *CallRequest) (*CallResponse, error) {
	return invoke[CallRequest, CallResponse](ctx, c, "Call", req)
}

func (c *client) Shutdown(ctx context.Context, req *Empty) (*Empty, error) {
	return invoke[Empty, Empty](ctx, c, "Shutdown", req)
}

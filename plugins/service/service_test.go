package service

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/status"

	"toolhost/plugins"
)

// echoHost is a plugins.Host whose answers are built from the requests, so that
// every field crossing the JSON codec both ways is checked. The plugin
// process itself is tested end to end in core/runner; this covers the
// hand-written service and codec over a real gRPC connection.
type echoHost struct{ load *plugins.LoadRequest }

func (h *echoHost) Load(_ context.Context, req *plugins.LoadRequest) (*plugins.LoadResponse, error) {
	h.load = req
	sigs := make([]plugins.Signature, len(req.Callables))
	for i, c := range req.Callables {
		sigs[i] = plugins.Signature{Callable: c, Params: []plugins.Param{{Name: "x", Kind: "KEYWORD_ONLY", HasDefault: true}}}
	}
	return &plugins.LoadResponse{Runtime: req.Runtime, Signatures: sigs}, nil
}

func (h *echoHost) Describe(context.Context, *plugins.Empty) (*plugins.LoadResponse, error) {
	return nil, errors.New("nothing loaded yet")
}

func (h *echoHost) Shutdown(context.Context, *plugins.Empty) (*plugins.Empty, error) {
	return &plugins.Empty{}, nil
}

func TestServiceOverGRPC(t *testing.T) {
	impl := &echoHost{}
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{plugins.PluginName: &GRPCPlugin{Impl: impl}})
	defer client.Close()
	raw, err := client.Dispense(plugins.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	host := raw.(plugins.Host)
	ctx := context.Background()
	req := &plugins.LoadRequest{Group: "G", Root: "/r", Modules: map[string]string{"m": "a/m.py"},
		Callables: []plugins.Callable{{Module: "m", Func: "f"}}, Runtime: plugins.RuntimeCPython, Python: "/py", Scratch: "/s",
		Limits: plugins.DefaultLimits}
	resp, err := host.Load(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(impl.load, req) {
		t.Errorf("the plugin received %+v, want %+v", impl.load, req)
	}
	if resp.Runtime != plugins.RuntimeCPython || len(resp.Signatures) != 1 || resp.Signatures[0].Callable.String() != "m.f" ||
		!resp.Signatures[0].Params[0].HasDefault {
		t.Errorf("load response %+v", resp)
	}
	// A plugin's error crosses as a gRPC status with its message.
	if _, err := host.Describe(ctx, &plugins.Empty{}); err == nil || status.Convert(err).Message() != "nothing loaded yet" {
		t.Errorf("describe error = %v", err)
	}
	if _, err := host.Shutdown(ctx, &plugins.Empty{}); err != nil {
		t.Error(err)
	}
}

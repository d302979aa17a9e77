package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/status"
)

// echoHost is a Host whose answers are built from the requests, so that
// every field crossing the JSON codec both ways is checked. The plugin
// process itself is tested end to end in core/runner; this covers the
// hand-written service and codec over a real gRPC connection.
type echoHost struct{ load *LoadRequest }

func (h *echoHost) Load(_ context.Context, req *LoadRequest) (*LoadResponse, error) {
	h.load = req
	sigs := make([]Signature, len(req.Callables))
	for i, c := range req.Callables {
		sigs[i] = Signature{Callable: c, Params: []Param{{Name: "x", Kind: "KEYWORD_ONLY", HasDefault: true}}}
	}
	return &LoadResponse{Runtime: req.Runtime, Signatures: sigs}, nil
}

func (h *echoHost) Describe(context.Context, *Empty) (*LoadResponse, error) {
	return nil, errors.New("nothing loaded yet")
}

func (h *echoHost) Call(_ context.Context, req *CallRequest) (*CallResponse, error) {
	return &CallResponse{OK: true, Result: req.Args, Output: string(req.Context), Worker: int(req.TimeoutMs),
		Runtime: req.Module + "." + req.Func, Error: &ToolError{Kind: ErrException, Type: "T", Message: "m", Traceback: "tb"}}, nil
}

func (h *echoHost) Shutdown(context.Context, *Empty) (*Empty, error) { return &Empty{}, nil }

func TestServiceOverGRPC(t *testing.T) {
	impl := &echoHost{}
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{PluginName: &GRPCPlugin{Impl: impl}})
	defer client.Close()
	raw, err := client.Dispense(PluginName)
	if err != nil {
		t.Fatal(err)
	}
	host := raw.(Host)
	ctx := context.Background()
	req := &LoadRequest{Group: "G", Root: "/r", Modules: map[string]string{"m": "a/m.py"},
		Callables: []Callable{{Module: "m", Func: "f"}}, Runtime: RuntimeCPython, Python: "/py", Scratch: "/s",
		Limits: DefaultLimits}
	resp, err := host.Load(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(impl.load, req) {
		t.Errorf("the plugin received %+v, want %+v", impl.load, req)
	}
	if resp.Runtime != RuntimeCPython || len(resp.Signatures) != 1 || resp.Signatures[0].Callable.String() != "m.f" ||
		!resp.Signatures[0].Params[0].HasDefault {
		t.Errorf("load response %+v", resp)
	}
	cr, err := host.Call(ctx, &CallRequest{Callable: Callable{Module: "m", Func: "f"}, Args: json.RawMessage(`{"x":[1,"é"]}`),
		TimeoutMs: 1234, Context: json.RawMessage(`{"session_id":"s"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !cr.OK || string(cr.Result) != `{"x":[1,"é"]}` || cr.Output != `{"session_id":"s"}` || cr.Worker != 1234 ||
		cr.Runtime != "m.f" || cr.Error.Traceback != "tb" {
		t.Errorf("call response %+v", cr)
	}
	// A plugin's error crosses as a gRPC status with its message.
	if _, err := host.Describe(ctx, &Empty{}); err == nil || status.Convert(err).Message() != "nothing loaded yet" {
		t.Errorf("describe error = %v", err)
	}
	if _, err := host.Shutdown(ctx, &Empty{}); err != nil {
		t.Error(err)
	}
}

func TestLimitsDefaults(t *testing.T) {
	l := Limits{Workers: 9}.WithDefaults()
	if l.Workers != 9 || l.MemoryBytes != DefaultLimits.MemoryBytes || l.ResultBytes != 1<<20 || l.OutputBytes != 64<<10 {
		t.Errorf("limits = %+v", l)
	}
}

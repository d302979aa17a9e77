package plugins

import (
	"context"
	"encoding/json"
)

// The go-plugin handshake of toolhost's plugin process (see
// service.Handshake): a binary started without the cookie refuses to serve.
const (
	ProtocolVersion  = 1
	MagicCookieKey   = "TOOLHOST_PYHOST_COOKIE"
	MagicCookieValue = "9f1c2d7e-toolhost-pyhost"
)

// PluginName is the key of the plugin in go-plugin's plugin set.
const PluginName = EntryPyhost

// Host is the service the plugin process serves over go-plugin's gRPC: it
// holds one group. Its calls come over the data channel (plugins/channel),
// one frame each way, not through this service.
type Host interface {
	// Load imports the group's modules and describes its callables.
	Load(ctx context.Context, req *LoadRequest) (*LoadResponse, error)
	// Describe returns the signatures of the loaded group's callables.
	Describe(ctx context.Context, req *Empty) (*LoadResponse, error)
	// Shutdown stops every worker; the process exits after answering.
	Shutdown(ctx context.Context, req *Empty) (*Empty, error)
}

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

// Callbacks is what the core serves to its plugin process, over the data
// channel: toolhost.call_tool of the calls in flight.
type Callbacks interface {
	CallTool(ctx context.Context, req *ToolCallRequest) (*ToolCallResponse, error)
}

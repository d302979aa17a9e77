package definition

import "toolhost/core/typeexpr"

// builtins are the tools built into toolhost, which no definition declares
// and every workflow may list by object_name (spec 004, "Built-in tools").
var builtins = []*Tool{
	builtin("FinishSession", "finish_session",
		"Ends the conversation session. Call it when the conversation is over.",
		param("reason", "str", "Why the session ends, in a few words.", true)),
	builtin("TriggerKBSearch", "kb_search",
		"Searches the knowledge sources connected to the agent and returns the most relevant passages with their source.",
		param("query", "str", "What to search for, in the customer's words or as keywords.", false),
		param("top_k", "int", "How many passages to return (default 5).", true)),
	builtin("ReportUnansweredQuestion", "report_unanswered_question",
		"Records an on-topic question the agent could not answer, so that people can review it later.",
		param("question", "str", "The customer's question, as asked.", false)),
	builtin("SendChatMessage", "send_chat_message",
		"Sends a chat message to the customer.",
		param("message", "str", "The text of the message.", false)),
}

func builtin(objectName, name, description string, params ...*Parameter) *Tool {
	return &Tool{ObjectName: objectName, Name: name, Description: description, Parameters: params, Builtin: true}
}

func param(name, typ, description string, optional bool) *Parameter {
	t, err := typeexpr.Parse(typ)
	if err != nil {
		panic("definition: bad built-in type " + typ + ": " + err.Error())
	}
	return &Parameter{Name: name, Type: t, Description: description, Optional: optional}
}

// Builtins returns the built-in tools, in a fixed order. The caller must
// not modify them.
func Builtins() []*Tool { return builtins }

// Builtin returns the built-in tool with the given object_name, or nil.
func Builtin(objectName string) *Tool {
	for _, t := range builtins {
		if t.ObjectName == objectName {
			return t
		}
	}
	return nil
}

// IsBuiltin reports whether objectName names a built-in tool.
func IsBuiltin(objectName string) bool { return Builtin(objectName) != nil }

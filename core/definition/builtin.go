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
	// The engines of spec 000 (core/engines runs them): each turns data
	// into one visual block for the UI and a short summary for the model.
	// Their data are columns and rows of cells, which every schema
	// dialect can express (OpenAI's strict mode and Gemini take no object
	// of free keys).
	builtin("chart_tool", "chart_tool",
		"Shows data as a chart to the user: give the columns and the rows, which column holds the labels (x) and which the values (y). The user sees the chart; you get a short summary.",
		param("columns", "list[str]", "The names of the columns, e.g. [\"quarter\", \"price\"].", false),
		param("rows", "list[list[str | int | float | None]]", "The rows, one cell per column, e.g. [[\"Q1\", 10], [\"Q2\", 20]].", false),
		param("x", "str", "The column of the labels (the x axis). Default: the first column whose cells are not all numbers.", true),
		param("y", "list[str]", "The columns of the series, one series each. Default: every other column whose cells are all numbers.", true),
		param("type", "Literal['bar', 'line', 'area', 'pie', 'scatter']", "The kind of chart (default bar).", true),
		param("title", "str", "The chart's title.", true),
		param("stacked", "bool", "Stack the series (bar and area).", true)),
	builtin("table_tool", "table_tool",
		"Shows rows as a table to the user; you get a short summary.",
		param("columns", "list[str]", "The names of the columns, in order.", false),
		param("rows", "list[list[str | int | float | bool | None]]", "The rows, one cell per column.", false),
		param("titles", "list[str]", "The columns' titles, in the same order (default: their names).", true),
		param("title", "str", "The table's title.", true)),
	builtin("visualize_tool", "visualize_tool",
		"Shows data to the user as a chart or a table, whichever fits its shape: a chart for 2 to 50 rows of one text column and numeric ones, a table otherwise. You get a short summary.",
		param("columns", "list[str]", "The names of the columns, in order.", false),
		param("rows", "list[list[str | int | float | bool | None]]", "The rows, one cell per column.", false),
		param("title", "str", "The title.", true)),
	builtin("file_tool", "file_tool",
		"Gives the user a file to download, made of the content you write; you get its name and size.",
		param("name", "str", "The file's name, with its extension (report.html, data.csv).", false),
		param("content", "str", "The file's content: text, or base64 with encoding base64.", false),
		param("mime", "str", "Its media type (default: from the name's extension, else text/plain).", true),
		param("encoding", "Literal['text', 'base64']", "How content is written (default text).", true)),
	builtin("map_tool", "map_tool",
		"Shows places on a map to the user, with a link for channels without a map; you get the link and the centre.",
		param("markers", "list[list[float | str]]", "The places, each [lat, lon] or [lat, lon, \"label\"], e.g. [[54.85, 83.10, \"Akademgorodok\"]].", false),
		param("title", "str", "The map's title.", true),
		param("zoom", "int", "The zoom, 0 to 19 (default: one that fits every marker).", true),
		param("center", "list[float]", "The centre [lat, lon] (default: the middle of the markers).", true)),
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

package proxy

import (
	"bytes"

	"github.com/hermes-units/hermes/internal/sse"
	"github.com/hermes-units/hermes/timeouts"
)

// progress is what an SSE event means to the watchdog.
type progress int

const (
	// keepAlive: no content (empty deltas, role-only chunks, usage,
	// response.created, pings). Does not reset the stale stream timer.
	keepAlive progress = iota
	// content: text, reasoning or tool-call progress. Resets it.
	content
	// terminal: the stream's last event ([DONE], response.completed,
	// response.failed, response.incomplete). The drain starts.
	terminal
	// failed: the provider's own error event, also terminal.
	failed
)

// classify reads one dispatched event of a stream of the given API.
func classify(api timeouts.API, p sse.Piece) progress {
	if api == timeouts.Responses {
		typ := p.Type
		if typ == "" {
			typ = string(stringField(p.Data, "type"))
		}
		switch typ {
		case "response.completed", "response.incomplete":
			return terminal
		case "response.failed", "error":
			return failed
		case "response.created", "response.in_progress", "response.queued", "":
			return keepAlive
		}
		if len(typ) > len("response.") && typ[:len("response.")] == "response." {
			return content
		}
		return keepAlive
	}
	data := bytes.TrimSpace(p.Data)
	if string(data) == "[DONE]" {
		return terminal
	}
	if p.Type == "error" || hasValue(data, `"error"`) && !hasValue(data, `"choices"`) {
		return failed
	}
	for _, k := range chatProgressKeys {
		if hasValue(data, k) {
			return content
		}
	}
	return keepAlive
}

// chatProgressKeys are the chat-completion chunk fields whose non-empty
// value is progress: text, reasoning (DeepSeek's reasoning_content,
// OpenRouter's and others' reasoning), refusals, tool calls, legacy
// function calls and the finish reason.
var chatProgressKeys = []string{`"content"`, `"reasoning_content"`, `"reasoning"`, `"reasoning_details"`, `"refusal"`, `"tool_calls"`, `"function_call"`, `"finish_reason"`, `"text"`}

// hasValue reports whether the JSON text holds key (quoted) as an object key
// with a non-empty value: a string with at least one character, a non-empty
// array, or an object. null, "" and [] are empty. A quote inside a JSON
// string is always escaped, so an unescaped `"key"` followed by ':' is a
// key, wherever it is nested; matching on bytes keeps the relay off the
// allocation path of a full decode for every chunk.
func hasValue(data []byte, key string) bool {
	for {
		i := bytes.Index(data, []byte(key))
		if i < 0 {
			return false
		}
		if i > 0 && data[i-1] == '\\' {
			data = data[i+len(key):]
			continue
		}
		rest := skipSpace(data[i+len(key):])
		if len(rest) == 0 || rest[0] != ':' {
			data = data[i+len(key):]
			continue
		}
		rest = skipSpace(rest[1:])
		if len(rest) >= 2 {
			switch rest[0] {
			case '"':
				if rest[1] != '"' {
					return true
				}
			case '[':
				if r := skipSpace(rest[1:]); len(r) > 0 && r[0] != ']' {
					return true
				}
			case '{':
				return true
			}
		}
		data = rest
	}
}

// stringField returns the value of the first "key":"value" pair, raw
// (escapes kept), or nil.
func stringField(data []byte, key string) []byte {
	q := `"` + key + `"`
	for {
		i := bytes.Index(data, []byte(q))
		if i < 0 {
			return nil
		}
		rest := skipSpace(data[i+len(q):])
		if len(rest) > 0 && rest[0] == ':' {
			rest = skipSpace(rest[1:])
			if len(rest) > 0 && rest[0] == '"' {
				if j := bytes.IndexByte(rest[1:], '"'); j >= 0 {
					return rest[1 : 1+j]
				}
			}
			return nil
		}
		data = data[i+len(q):]
	}
}

func skipSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}

package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hermes-units/hermes/timeouts"
)

// errBadRequest is wrapped by request body errors (HTTP 400).
var errBadRequest = errors.New("bad request")

// request is a client's model request body, kept as raw fields so that
// whatever the proxy does not touch reaches the provider unchanged.
type request struct {
	fields map[string]json.RawMessage
	Model  string
	Stream bool
}

func parseRequest(b []byte) (*request, error) {
	r := &request{}
	if err := json.Unmarshal(b, &r.fields); err != nil || r.fields == nil {
		return nil, fmt.Errorf("%w: the body is not a JSON object: send an OpenAI-style request", errBadRequest)
	}
	if err := json.Unmarshal(r.fields["model"], &r.Model); err != nil || r.Model == "" {
		return nil, fmt.Errorf("%w: the body has no \"model\" string: name a model, as PROVIDER/MODEL or as listed by GET /v1/models", errBadRequest)
	}
	if s, ok := r.fields["stream"]; ok && string(s) != "null" {
		if err := json.Unmarshal(s, &r.Stream); err != nil {
			return nil, fmt.Errorf("%w: \"stream\" must be true or false", errBadRequest)
		}
	}
	return r, nil
}

// tokens estimates the context size: the characters of the fields that
// carry the conversation and the tools, over 4. It counts their JSON text,
// punctuation included, which errs on the side of patience.
func (r *request) tokens() int {
	var texts []string
	for _, k := range []string{"messages", "tools", "functions", "input", "instructions", "prompt"} {
		if v, ok := r.fields[k]; ok {
			texts = append(texts, string(v))
		}
	}
	return timeouts.EstimateTokens(texts...)
}

// thinking reports whether the request enables thinking: Anthropic-style
// "thinking" (an object whose type is not "disabled", or true), OpenAI's "reasoning_effort" (any effort but
// "none"), or "reasoning" (an object, as the Responses API and OpenRouter
// take it, unless its effort is "none" or it says enabled: false; or
// true). A field that is absent, null or malformed enables nothing: the
// provider judges malformed fields, the proxy only budgets silence.
func (r *request) thinking() bool {
	var th struct {
		Type *string `json:"type"`
	}
	var re struct {
		Effort  *string `json:"effort"`
		Enabled *bool   `json:"enabled"`
	}
	if r.switchedOn("thinking", &th, func() bool { return th.Type == nil || *th.Type != "disabled" }) {
		return true
	}
	if v, ok := r.fields["reasoning_effort"]; ok {
		var effort string
		if json.Unmarshal(v, &effort) == nil && effort != "" && effort != "none" {
			return true
		}
	}
	return r.switchedOn("reasoning", &re, func() bool {
		return (re.Effort == nil || *re.Effort != "none") && (re.Enabled == nil || *re.Enabled)
	})
}

// switchedOn reports whether the field k is true, or an object (decoded
// into obj) that on, reading obj, says enables. Absent, false, null
// (which decodes as false) or malformed: off.
func (r *request) switchedOn(k string, obj any, on func() bool) bool {
	v, ok := r.fields[k]
	if !ok {
		return false
	}
	var b bool
	if json.Unmarshal(v, &b) == nil {
		return b
	}
	return json.Unmarshal(v, obj) == nil && on()
}

func (r *request) setModel(m string) {
	b, _ := json.Marshal(m)
	r.fields["model"] = b
}

// wrapUp adds the run's wrap-up notice: a system message appended to
// messages (chat), or a paragraph appended to instructions (Responses).
func (r *request) wrapUp(api timeouts.API, notice string) error {
	if api == timeouts.Responses {
		var ins string
		if v, ok := r.fields["instructions"]; ok && string(v) != "null" {
			if err := json.Unmarshal(v, &ins); err != nil {
				return fmt.Errorf("%w: \"instructions\" must be a string", errBadRequest)
			}
		}
		if ins != "" {
			ins = strings.TrimRight(ins, "\n") + "\n\n"
		}
		b, _ := json.Marshal(ins + notice)
		r.fields["instructions"] = b
		return nil
	}
	var msgs []json.RawMessage
	if v, ok := r.fields["messages"]; ok {
		if err := json.Unmarshal(v, &msgs); err != nil {
			return fmt.Errorf("%w: \"messages\" must be an array", errBadRequest)
		}
	}
	m, _ := json.Marshal(map[string]string{"role": "system", "content": notice})
	msgs = append(msgs, m)
	b, err := json.Marshal(msgs)
	if err != nil {
		return fmt.Errorf("%w: %v", errBadRequest, err)
	}
	r.fields["messages"] = b
	return nil
}

// body encodes the request for the provider. HTML escaping is off so that
// text reaches the provider as the client wrote it.
func (r *request) body() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(r.fields) // raw fields were parsed from JSON: cannot fail
	return b.Bytes()
}

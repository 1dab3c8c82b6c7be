package timeouts

import "github.com/hermes-units/hermes/internal/word"

// Layer is one detector of the timeout stack (SPEC §10). Each layer watches a
// different kind of silence; a Plan gives every layer a value.
type Layer int

const (
	// SocketRead bounds the wait for the next chunk of bytes on the socket.
	SocketRead Layer = iota
	// StaleStream bounds a stream's silence measured in content: SSE
	// keep-alives and comments do not reset it.
	StaleStream
	// StaleNonStream bounds a non-streaming call that never answers.
	StaleNonStream
	// FirstEvent bounds a Responses API stream that was accepted but has
	// sent no event yet.
	FirstEvent
	// APICall bounds a whole non-streaming request.
	APICall
	// Drain bounds the wait for a relay to close the SSE socket after the
	// terminal event.
	Drain

	numLayers
)

// Layers lists every layer in table order.
var Layers = []Layer{SocketRead, StaleStream, StaleNonStream, FirstEvent, APICall, Drain}

var layerNames = [numLayers]string{"socket_read", "stale_stream", "stale_non_stream", "first_event", "api_call", "drain"}

var layerWords = word.Ints[Layer]("Layer", "layer", layerNames[:]...).Wrap(ErrInvalid)

var layerTitles = [numLayers]string{"socket read", "stale stream", "stale non-stream", "first event", "API call", "post-terminal drain"}

// String returns the snake_case name used in JSON and flags.
func (l Layer) String() string { return layerWords.Name(l) }

// Title returns the human name used in tables and error messages.
func (l Layer) Title() string {
	if l < 0 || l >= numLayers {
		return l.String()
	}
	return layerTitles[l]
}

// MarshalText implements encoding.TextMarshaler.
func (l Layer) MarshalText() ([]byte, error) { return layerWords.Marshal(l) }

// UnmarshalText implements encoding.TextUnmarshaler: it reads a layer
// name as printed by Layer.String. Unknown names are an error wrapping
// ErrInvalid.
func (l *Layer) UnmarshalText(b []byte) error { return layerWords.Unmarshal(l, b) }

// API is the provider API a call speaks.
type API int

const (
	// Chat is /v1/chat/completions.
	Chat API = iota
	// Responses is /v1/responses; its streams get the first-event watchdog.
	Responses
)

var apiWords = word.Ints[API]("API", "api", "chat", "responses").Wrap(ErrInvalid)

// String returns "chat" or "responses".
func (a API) String() string { return apiWords.Name(a) }

// MarshalText implements encoding.TextMarshaler.
func (a API) MarshalText() ([]byte, error) { return apiWords.Marshal(a) }

// UnmarshalText implements encoding.TextUnmarshaler; see ParseAPI.
func (a *API) UnmarshalText(b []byte) error { return apiWords.Unmarshal(a, b) }

// ParseAPI parses "chat" or "responses"; anything else is an error wrapping
// ErrInvalid.
func ParseAPI(s string) (API, error) { return apiWords.Parse(s) }

package control

import (
	"context"
	"errors"
	"net/http"

	"github.com/hermes-units/hermes/internal/diag"
)

// More sentinel errors. ErrDenied and ErrBadRequest travel across the socket
// like ErrUnknownUnit and ErrConflict; ErrNotRunning, ErrInUse and ErrUnsafe
// are local: the client's and Listen's verdicts on the socket path.
var (
	ErrDenied      = errors.New("permission denied")                     // 403: the peer's uid may not steer this daemon
	ErrBadRequest  = errors.New("bad request")                           // 400: a malformed request (empty unit name, bad JSON)
	ErrNotRunning  = errors.New("hermesd is not running")                // Dial or a request found no daemon on the socket
	ErrInUse       = errors.New("another hermesd is serving the socket") // Listen: a live socket answers at the path
	ErrUnsafe      = errors.New("unsafe control socket path")            // Listen: the directory is too open or not ours, or the path is not a socket
	ErrPathTooLong = errors.New("control socket path too long")          // Listen, Dial: over the kernel's limit for a Unix socket path
)

// Wire codes of ErrorBody.Code. A client that meets a code it does not know
// keeps it in Error.Code and matches no sentinel.
const (
	CodeUnknownUnit = "unknown_unit"
	CodeConflict    = "conflict"
	CodeDenied      = "denied"
	CodeBadRequest  = "bad_request"
	CodeTimeout     = "timeout"  // the backend gave up waiting (its own bound, not the client's ctx)
	CodeNoRoute     = "no_route" // the daemon does not serve this method and path: versions differ
	CodeInternal    = "internal"
)

// ErrorBody is the JSON body of every non-2xx answer. Error is the whole
// text, what a client older than Summary and Detail shows; Summary is what
// happened and Detail what to do about it (absent when there is nothing to
// do), the text of Error with the detail apart.
type ErrorBody struct {
	Error   string `json:"error"`            // the whole text, for a human
	Summary string `json:"summary"`          // what happened, and where
	Detail  string `json:"detail,omitempty"` // what to do
	Code    string `json:"code"`             // one of the Code constants
}

// newErrorBody is err as the body of an answer with code.
func newErrorBody(err error, code string) ErrorBody {
	summary, detail := diag.Split(err)
	return ErrorBody{Error: err.Error(), Summary: summary, Detail: detail, Code: code}
}

// Error is a failure the daemon reported. It unwraps to the sentinel its
// code stands for, so errors.Is(err, ErrUnknownUnit) works on the client
// side of the socket.
type Error struct {
	Status  int    // HTTP status of the answer
	Code    string // ErrorBody.Code
	Message string // ErrorBody.Error
	Summary string // ErrorBody.Summary, or Message from a daemon that sends none
	Detail  string // ErrorBody.Detail
}

func (e *Error) Error() string { return e.Message }

// Parts is e's summary and detail, as the daemon split them.
func (e *Error) Parts() (summary, detail string) { return e.Summary, e.Detail }

// Unwrap returns the sentinel of e.Code, or nil for codes with none.
func (e *Error) Unwrap() error { return sentinel(e.Code) }

// codes pairs the sentinels that travel with their wire code and status.
var codes = []struct {
	err    error
	code   string
	status int
}{
	{ErrUnknownUnit, CodeUnknownUnit, http.StatusNotFound},
	{ErrConflict, CodeConflict, http.StatusConflict},
	{ErrDenied, CodeDenied, http.StatusForbidden},
	{ErrBadRequest, CodeBadRequest, http.StatusBadRequest},
	{ErrRefused, CodeRefused, http.StatusUnprocessableEntity},
	{context.DeadlineExceeded, CodeTimeout, http.StatusGatewayTimeout},
}

// encodeError maps a Backend error to its wire code and HTTP status.
func encodeError(err error) (code string, status int) {
	for _, c := range codes {
		if errors.Is(err, c.err) {
			return c.code, c.status
		}
	}
	return CodeInternal, http.StatusInternalServerError
}

func sentinel(code string) error {
	if code == CodeTimeout {
		// Not context.DeadlineExceeded: the daemon's bound ran out, not the
		// caller's ctx, and a caller must be able to tell them apart.
		return nil
	}
	for _, c := range codes {
		if c.code == code {
			return c.err
		}
	}
	return nil
}

package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"

	fastjson "github.com/segmentio/encoding/json"
)

// Client steers a daemon over its control socket. Its methods mirror Backend
// (a Client is a Backend) and wait as long as their ctx allows: in
// particular Stop returns once the daemon reports the group empty. Safe for
// concurrent use; Close releases its idle connections.
type Client struct {
	path string
	hc   *http.Client
}

var (
	_ Backend = (*Client)(nil)
	_ Actor   = (*Client)(nil)
)

// Dial returns a Client for the daemon at socketPath. It connects lazily, but
// checks now that a socket exists there, so that a daemon that is not
// running is reported before any work: the error then matches ErrNotRunning
// and says how to start one.
func Dial(socketPath string) (*Client, error) {
	if socketPath == "" {
		return nil, errors.New("no control socket path; set --socket or HERMES_SOCKET")
	}
	if len(socketPath) > maxSocketPath {
		return nil, tooLong(socketPath)
	}
	fi, err := os.Stat(socketPath)
	if err != nil {
		return nil, dialError(socketPath, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return nil, fmt.Errorf("%s is not a socket; is --socket right?", socketPath)
	}
	var d net.Dialer
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socketPath)
		},
		DisableCompression: true,
	}
	return &Client{path: socketPath, hc: &http.Client{Transport: tr}}, nil
}

// Close releases the Client's idle connections.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// Status is the daemon's status, for the named units or for all. Its slices
// are never nil, so that it encodes as the JSON contract says.
func (c *Client) Status(ctx context.Context, units ...string) (Status, error) {
	q := url.Values{}
	for _, u := range units {
		q.Add("unit", u)
	}
	p := pathStatus
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	data, err := c.call(ctx, http.MethodGet, p, nil)
	if err != nil {
		return Status{}, err
	}
	// The rows are decoded into room made for them at once: a slice
	// grown one row at a time is copied a dozen times at 1000 units.
	// Each row is an object that begins with its name.
	st := Status{Units: make([]Unit, 0, bytes.Count(data, []byte(`{"name":`)))}
	if err := decodeAnswer(http.MethodGet, p, data, &st); err != nil {
		return Status{}, err
	}
	return normalize(st), nil
}

// Start starts unit; it returns once the unit is started, not ready (see
// ActionResult).
func (c *Client) Start(ctx context.Context, unit string) error {
	return c.action(ctx, unit, ActionStart)
}

// Stop stops unit and returns once its group is empty.
func (c *Client) Stop(ctx context.Context, unit string) error { return c.action(ctx, unit, ActionStop) }

// Restart restarts unit.
func (c *Client) Restart(ctx context.Context, unit string) error {
	return c.action(ctx, unit, ActionRestart)
}

func (c *Client) action(ctx context.Context, unit string, a Action) error {
	_, err := c.Act(ctx, unit, a)
	return err
}

// Act does a to unit and returns the daemon's answer: for a stop, the
// units it took down with unit; for a start of a job, the run it began.
// A daemon older than these fields answers without them.
func (c *Client) Act(ctx context.Context, unit string, a Action) (ActionResult, error) {
	return onUnit[ActionResult](ctx, c, http.MethodPost, unit, string(a), nil)
}

// unitAction posts in to unit's route action, which answers an
// ActionResult.
func (c *Client) unitAction(ctx context.Context, unit, action string, in any) error {
	_, err := onUnit[ActionResult](ctx, c, http.MethodPost, unit, action, in)
	return err
}

// onUnit sends in to unit's route (…/v1/units/UNIT/route) and reads the
// answer as a T. An empty unit name is ErrBadRequest, and nothing is sent.
func onUnit[T any](ctx context.Context, c *Client, method, unit, route string, in any) (T, error) {
	var out T
	if unit == "" {
		return out, fmt.Errorf("%w: empty unit name", ErrBadRequest)
	}
	err := c.do(ctx, method, pathUnits+url.PathEscape(unit)+"/"+route, in, &out)
	return out, err
}

// Reload asks the daemon to re-read its units now (dryRun: only to say what
// it would do) and returns the plan.
func (c *Client) Reload(ctx context.Context, dryRun bool) (Plan, error) {
	var p Plan
	if err := c.do(ctx, http.MethodPost, pathReload, ReloadRequest{DryRun: dryRun}, &p); err != nil {
		return Plan{}, err
	}
	return normalizePlan(p), nil
}

// Version is the daemon's build. A daemon older than this API answers
// with an *Error of Code CodeNoRoute.
func (c *Client) Version(ctx context.Context) (VersionInfo, error) {
	var v VersionInfo
	err := c.do(ctx, http.MethodGet, pathVersion, nil, &v)
	return v, err
}

// LogPath is unit's current log file.
func (c *Client) LogPath(ctx context.Context, unit string) (string, error) {
	li, err := onUnit[LogInfo](ctx, c, http.MethodGet, unit, "log", nil)
	return li.Path, err
}

// do sends one request and decodes a 2xx answer into out, or turns the
// ErrorBody of any other answer into an *Error.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	data, err := c.call(ctx, method, path, in)
	if err != nil {
		return err
	}
	return decodeAnswer(method, path, data, out)
}

// maxAnswer bounds the answer read.
const maxAnswer = 16 << 20

// call sends one request (in, when not nil, as its JSON body) and returns
// a 2xx answer's body, or the *Error of any other answer.
func (c *Client) call(ctx context.Context, method, path string, in any) ([]byte, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	resp, err := c.send(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var data []byte
	if n := resp.ContentLength; n >= 0 && n <= maxAnswer { // read into its size at once
		data = make([]byte, n)
		_, err = io.ReadFull(resp.Body, data)
	} else {
		data, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, fmt.Errorf("reading hermesd's answer on %s: %w", c.path, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, answerError(resp, data, fmt.Sprintf("hermesd answered %s: %s", resp.Status, bytes.TrimSpace(data)))
	}
	return data, nil
}

// decodeAnswer decodes the answer data to method path into out. It
// decodes as encoding/json does (FuzzDecodeAnswer holds it to that), in a
// quarter of the time and half the memory: a status of 5000 units is
// some 1.8 MB, and its decoding was the largest part of `hermesctl
// status`. An answer it refuses is decoded again by encoding/json, whose
// error says where in fewer words. One difference is known: it skips a
// value nested deeper than encoding/json's limit (10000) in a field it
// does not know, where encoding/json refuses the answer.
func decodeAnswer(method, path string, data []byte, out any) error {
	if fastjson.Unmarshal(data, out) == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("hermesd's answer to %s %s is not what this hermesctl understands (%w); are they the same version?", method, path, err)
	}
	return nil
}

// send sends one request to hermesd (a body is JSON) and returns the
// answer, whatever its status; the caller closes its body. A failure to
// reach the socket is worded by dialError, unless ctx ended first.
func (c *Client) send(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://hermesd"+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, dialError(c.path, err)
	}
	return resp, nil
}

// answerError is the *Error of an answer that is not 2xx, read from the
// ErrorBody in data; an answer without one says otherwise, as an internal
// error.
func answerError(resp *http.Response, data []byte, otherwise string) *Error {
	var eb ErrorBody
	if json.Unmarshal(data, &eb) != nil || eb.Error == "" {
		eb = ErrorBody{Error: otherwise, Code: CodeInternal}
	}
	if eb.Summary == "" { // a daemon older than the split
		eb.Summary, eb.Detail = eb.Error, ""
	}
	return &Error{Status: resp.StatusCode, Code: eb.Code, Message: eb.Error, Summary: eb.Summary, Detail: eb.Detail}
}

// dialError words a failure to reach the socket for a human.
func dialError(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOENT):
		return &refusal{kind: ErrNotRunning, msg: fmt.Sprintf("hermesd is not running (no socket at %s); start it with `hermesd` or `make run`", path)}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &refusal{kind: ErrNotRunning, msg: fmt.Sprintf("hermesd is not running (nothing answers on %s); start it with `hermesd` or `make run`", path)}
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EACCES):
		return &refusal{kind: ErrDenied, msg: fmt.Sprintf("permission denied on %s: the control socket belongs to another user", path)}
	}
	return fmt.Errorf("cannot reach hermesd on %s: %w", path, err)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptrace"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/spf13/cobra"
)

// How a command reaches hermesd, and where it prints. Every command that
// talks to the daemon dials it here, at the socket root's
// PersistentPreRunE resolved into g (flag > HERMES_SOCKET > hermes.yaml >
// the default place a socket is found, paths.FindSocket), so that they all
// talk to the same daemon and report one that is not running alike. A
// command that waits for the outcome of its actions (start, restart,
// enable) follows the daemon's events on the same connection (conn.follow)
// before its first action.

// streams are where a command reads and prints, and in which form: its
// input (what top reads keys from), the command's output, its notes and
// progress, and whether -o json was asked for. A command's RunE takes
// them from cobra (streamsOf); a test calls the command's run function
// with buffers.
type streams struct {
	in          io.Reader
	out, errOut io.Writer
	json        bool // -o json
}

// streamsOf is cmd's input, output and error streams, and -o from g.
func streamsOf(cmd *cobra.Command, g *globals) (streams, error) {
	asJSON, err := g.jsonOutput()
	if err != nil {
		return streams{}, err
	}
	return streams{in: cmd.InOrStdin(), out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr(), json: asJSON}, nil
}

// clientOptions are what the options of every command embed: the paths
// and socket every command shares (the globals), and where it prints. A
// test fills them in and calls the command's run function.
type clientOptions struct {
	g *globals
	streams
	// unknownExit is the exit status of a unit pattern that matches no
	// unit (glob.go): the command's for a unit it does not know. 0 is
	// exitcode.Failure.
	unknownExit int
}

// command is cmd, with the RunE of a command with a run function: it
// takes cmd's streams into o (-o from o.g), then calls run with cmd's
// context and arguments. run sets the arguments into its options and
// calls the command's run function, which is all that cobra does not do.
func (o *clientOptions) command(cmd *cobra.Command, run func(ctx context.Context, args []string) error) *cobra.Command {
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		var err error
		if o.streams, err = streamsOf(cmd, o.g); err != nil {
			return err
		}
		return run(cmd.Context(), args)
	}
	return cmd
}

// unitsCommand is command for a command whose arguments are unit names:
// they complete from the units directory (completeUnits), and their
// patterns are expanded against the units hermesd knows (daemonUnits:
// expandUnits) and set into *units before run is called.
func (o *clientOptions) unitsCommand(cmd *cobra.Command, units *[]string, run func(context.Context) error) *cobra.Command {
	return o.unitsCommandOf(cmd, units, daemonUnits, run)
}

// unitsCommandOf is unitsCommand, with patterns expanded against names.
func (o *clientOptions) unitsCommandOf(cmd *cobra.Command, units *[]string, names unitNames, run func(context.Context) error) *cobra.Command {
	cmd.ValidArgsFunction = completeUnits(o.g)
	return o.command(cmd, func(ctx context.Context, args []string) error {
		var err error
		if *units, err = expandUnits(ctx, o.g, args, names); err != nil {
			code := o.unknownExit
			if code == 0 {
				code = exitcode.Failure
			}
			if errors.Is(err, errNoMatch) {
				return &exitError{code: code, err: fmt.Errorf("%s: %w", cmd.Name(), err)}
			}
			return err
		}
		return run(ctx)
	})
}

// show prints v on s: as JSON with -o json, else made inert (inertAll)
// and written for a human by text.
func show[T any](s streams, v T, text func(io.Writer, T)) error {
	if s.json {
		return writeJSON(s.out, v)
	}
	inertAll(&v)
	text(s.out, v)
	return nil
}

// progress is where a wait shows its progress: the error stream, and
// nowhere with -o json (the output is then data alone).
func (s streams) progress() io.Writer {
	if s.json {
		return nil
	}
	return s.errOut
}

// answerWithin bounds how long a command waits for hermesd's first answer
// (dial). A hermesd that accepts connections but does not answer (stopped
// by SIGSTOP or a debugger, or wedged) would otherwise hold every command
// forever: the kernel queues the connection for it. Past the first answer
// nothing is bounded here: a stop waits for its group to empty, logs -f and
// events -f stream for as long as they are read.
const answerWithin = 5 * time.Second

// dial connects to hermesd at g's socket and waits, at most answerWithin,
// for it to answer a first request (its version). When no daemon is running
// there the error matches control.ErrNotRunning and says how to start one;
// when one is there but does not answer in time, the error is noAnswer's.
func dial(g *globals) (*control.Client, error) {
	c, err := control.Dial(g.Socket)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), answerWithin)
	defer cancel()
	var ce *control.Error
	switch _, err = c.Version(ctx); {
	case err == nil, errors.As(err, &ce): // an answer, even a refusal (an older hermesd has no version route)
		return c, nil
	case errors.Is(err, context.DeadlineExceeded):
		c.Close()
		return nil, noAnswer(g)
	}
	c.Close()
	return nil, err
}

// noAnswer is the error of a hermesd that did not answer on g's socket
// within answerWithin: it exits with exitcode.HermesctlNotRunning and
// says what to check.
func noAnswer(g *globals) error {
	return &exitError{code: exitcode.HermesctlNotRunning, err: fmt.Errorf(
		"hermesd does not answer on %s: no answer within %v; it is stopped or wedged: `ps -o pid,stat,args -C hermesd` shows it (stat T: stopped, `kill -CONT PID` resumes it; otherwise restart it)",
		g.Socket, answerWithin)}
}

// errNoAnswer ends the context of askStatus's request when hermesd has
// not begun its answer within answerWithin.
var errNoAnswer = errors.New("no answer within the bound")

// askStatus is hermesd's status of the units named (all: none), asked on
// g's socket in one request: a status is answered at once, so that its
// own answer, not dial's version asked first, is the one bounded by
// answerWithin (the bound ends once hermesd has begun to answer; reading
// the rows is not bounded). A round trip fewer is most of what a status
// waits for while hermesd is busy. Its errors are those of dial and of
// control.Client.Status.
func askStatus(ctx context.Context, g *globals, names ...string) (control.Status, error) {
	c, err := control.Dial(g.Socket)
	if err != nil {
		return control.Status{}, err
	}
	defer c.Close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	bound := time.AfterFunc(answerWithin, func() { cancel(errNoAnswer) })
	defer bound.Stop()
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotFirstResponseByte: func() { bound.Stop() }})
	st, err := c.Status(ctx, names...)
	if err != nil && errors.Is(context.Cause(ctx), errNoAnswer) {
		return control.Status{}, noAnswer(g)
	}
	return st, err
}

// withClient dials hermesd at g's socket (dial), calls f with the client,
// and closes it once f has returned. The dial's error is returned as it
// is: control.ErrNotRunning when no daemon answers.
func withClient(g *globals, f func(*control.Client) error) error {
	c, err := dial(g)
	if err != nil {
		return err
	}
	defer c.Close()
	return f(c)
}

// conn is one command's connection to hermesd and, once follow has
// subscribed it to the daemon's events, the waiter for its actions'
// outcomes. Only the command's goroutine uses it; Close ends both.
type conn struct {
	*control.Client
	waiter *waiter // nil: the command does not wait (stop, --no-block, --no-start)
	end    func()  // ends the subscription and joins its goroutine; nil without one
}

// connect dials hermesd at g's socket (dial). The caller closes the conn.
func connect(g *globals) (*conn, error) {
	c, err := dial(g)
	if err != nil {
		return nil, err
	}
	return &conn{Client: c}, nil
}

// follow subscribes c to hermesd's events and returns once hermesd has
// subscribed it: called before the first action, no event of its outcome
// is missed. c.waiter then waits for outcomes, showing progress on show
// (nil: none). The subscription lasts until Close, or until ctx ends.
// verb names the command in the error of a daemon that does not stream
// its events.
func (c *conn) follow(ctx context.Context, verb string, show io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	f, err := subscribe(ctx, c.Client)
	if err != nil {
		cancel()
		return fmt.Errorf("%s: cannot follow hermesd's events to wait for the outcome (%w); --no-block starts without waiting", verb, err)
	}
	c.end = func() { cancel(); <-f.done }
	c.waiter = &waiter{c: c.Client, feed: f, show: newProgress(show)}
	return nil
}

// Close ends the subscription, if any, then releases the client.
func (c *conn) Close() error {
	if c.end != nil {
		c.end()
	}
	return c.Client.Close()
}

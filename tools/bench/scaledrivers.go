package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

var peerSizes = flag.String("sizes", "", "peers, scale and storm sections: numbers of units, comma-separated (default 100 for -peers, 10,100,1000,5000 for the scale and storm sections)")

// floorPeer is what starting and stopping n processes costs at the least:
// one POSIX sh starts every unit's command in the background, and at TERM
// sends TERM to them and waits for them. It has no status, no edit, and
// no owner whose death is a figure.
type floorPeer struct{ childManager }

func (f *floorPeer) Name() string { return "floor" }

func (f *floorPeer) Plays(op string) bool {
	return op == "start" || op == "clean stop" || op == "SIGTERM → manager exited"
}

func (f *floorPeer) Start(_ context.Context, t *peerTrial) error {
	f.t, f.c = t, nil
	var b strings.Builder
	b.WriteString("trap 'kill $pids; wait; exit 0' TERM\npids=\n")
	for i := range peerUnits {
		fmt.Fprintf(&b, "%s & pids=\"$pids $!\"\n", shellJoin(t.unitArgv(i)))
	}
	b.WriteString("wait\n")
	script := filepath.Join(t.dir, "floor.sh")
	if err := os.WriteFile(script, []byte(b.String()), 0o600); err != nil {
		return err
	}
	return f.start(peerEnv(t, peerMarkGen+"=0"), "floor.out", "/bin/sh", script)
}

func (f *floorPeer) Status(context.Context) error    { return errors.ErrUnsupported }
func (f *floorPeer) Edit(context.Context, int) error { return errors.ErrUnsupported }
func (f *floorPeer) Describe() played { // it plays no status nor edit
	return played{stop: "SIGTERM to one /bin/sh that started every unit with & (it sends TERM to each and waits)",
		owner: "one /bin/sh starting every unit with &"}
}

// shellJoin quotes argv for sh: each word in single quotes.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// processComposePeer is process-compose in the foreground without its
// terminal UI, with its own client over a Unix socket.
type processComposePeer struct {
	childManager
	bin string
}

func newProcessComposePeer() (*processComposePeer, error) {
	bin, err := exec.LookPath("process-compose")
	if err != nil {
		return nil, err
	}
	return &processComposePeer{bin: bin}, nil
}

func (p *processComposePeer) Name() string { return "process-compose" }

func (p *processComposePeer) conf() string { return filepath.Join(p.t.dir, "process-compose.yaml") }
func (p *processComposePeer) sock() string { return filepath.Join(p.t.dir, "pc.sock") }
func (p *processComposePeer) log() string  { return filepath.Join(p.t.dir, "process-compose.log") }

// config is the project with unit 0 at generation gen. A command is a
// string that process-compose runs through its shell (bash -c), which
// execs a lone command: the unit's process is still `sleep`.
func (p *processComposePeer) config(gen int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "version: \"0.5\"\nlog_location: %q\nprocesses:\n", filepath.Join(p.t.dir, "units.log"))
	for i := range peerUnits {
		fmt.Fprintf(&b, "  %s:\n    command: %q\n    environment: [%q]\n    availability: {restart: always}\n",
			unitName(i), shellJoin(p.t.unitArgv(i)), fmt.Sprintf("%s=%d", peerMarkGen, gen))
	}
	return []byte(b.String())
}

func (p *processComposePeer) client(ctx context.Context, args ...string) error {
	return runQuiet(ctx, peerEnv(p.t), p.bin, append(args, "-U", "-u", p.sock(), "-L", p.log())...)
}

func (p *processComposePeer) Start(_ context.Context, t *peerTrial) error {
	p.t, p.c = t, nil
	if err := os.WriteFile(p.conf(), p.config(0), 0o600); err != nil {
		return err
	}
	return p.start(peerEnv(t), "process-compose.out", p.bin,
		"up", "-f", p.conf(), "-t=false", "--disable-dotenv", "-U", "-u", p.sock(), "-L", p.log())
}

func (p *processComposePeer) Status(ctx context.Context) error {
	return p.client(ctx, "process", "list")
}

func (p *processComposePeer) Edit(ctx context.Context, gen int) error {
	if err := atomicWrite(p.conf(), p.config(gen)); err != nil {
		return err
	}
	return p.client(ctx, "project", "update", "-f", p.conf())
}

func (p *processComposePeer) Describe() played {
	return played{stop: "SIGTERM to process-compose", status: "`process-compose process list` over its Unix socket",
		edit:  "atomic save of process-compose.yaml with unit 0's environment changed, then `process-compose project update -f` (it watches no config file)",
		owner: "the process-compose process"}
}

package launchd

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/internal/paths"
	"howett.net/plist"
)

// agent is the part of a LaunchAgent that Plist writes, as a plist parser
// reads it back.
type agent struct {
	Label                string            `plist:"Label"`
	ProgramArguments     []string          `plist:"ProgramArguments"`
	EnvironmentVariables map[string]string `plist:"EnvironmentVariables"`
	WorkingDirectory     string            `plist:"WorkingDirectory"`
	RunAtLoad            bool              `plist:"RunAtLoad"`
	KeepAlive            map[string]bool   `plist:"KeepAlive"`
	ThrottleInterval     int64             `plist:"ThrottleInterval"`
	ExitTimeOut          int64             `plist:"ExitTimeOut"`
	AbandonProcessGroup  bool              `plist:"AbandonProcessGroup"`
	StandardOutPath      string            `plist:"StandardOutPath"`
	StandardErrorPath    string            `plist:"StandardErrorPath"`
}

// parse reads doc with a real property list parser, checks that it is
// the XML format and well-formed XML as well (comments included), and
// returns the agent and the set of top-level keys.
func parse(t *testing.T, doc []byte) (agent, []string) {
	t.Helper()
	var a agent
	format, err := plist.Unmarshal(doc, &a)
	if err != nil {
		t.Fatalf("plist.Unmarshal: %v\n%s", err, doc)
	}
	if format != plist.XMLFormat {
		t.Fatalf("parsed as format %s, want XML", plist.FormatNames[format])
	}
	var all map[string]any
	if _, err := plist.Unmarshal(doc, &all); err != nil {
		t.Fatalf("plist.Unmarshal into a map: %v", err)
	}
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		if _, err := d.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, doc)
		}
	}
	return a, slices.Sorted(maps.Keys(all))
}

// lint runs plutil -lint on doc where plutil exists: macOS has it, this
// Linux machine and CI do not, and no port of it is packaged for Debian.
func lint(t *testing.T, doc []byte) {
	t.Helper()
	plutil, err := exec.LookPath("plutil")
	if err != nil {
		t.Log("plutil -lint skipped: plutil is not on PATH (it ships with macOS); the plist parser checked the file")
		return
	}
	p := filepath.Join(t.TempDir(), "agent.plist")
	if err := os.WriteFile(p, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(t.Context(), plutil, "-lint", p).CombinedOutput(); err != nil {
		t.Errorf("plutil -lint: %v\n%s", err, out)
	}
}

func base() Gateway {
	return Gateway{
		Label:       DefaultLabel,
		Hermesd:     "/usr/local/bin/hermesd",
		Units:       "/Users/u/.config/hermes/units",
		State:       "/Users/u/.local/state/hermes",
		LogDir:      "/Users/u/Library/Logs/hermes",
		Throttle:    5 * time.Second,
		ExitTimeout: 90 * time.Second,
	}
}

// hostile are values a path or a variable can hold that XML or a naive
// writer would mangle.
var hostile = map[string]string{
	"spaces":           "/Users/Jane Doe/My Units/  two  spaces ",
	"dotdot":           "/Users/u/../u/./units/..",
	"metacharacters":   `/tmp/a&b<c>d"e'f]]>g&amp;h`,
	"comment marks":    "/tmp/<!-- x -->/--/-",
	"non-ASCII":        "/Users/zoë/日本語/🚀/Ünïcödé",
	"line breaks":      "/tmp/a\nb\r\nc\rd\te",
	"very long":        "/" + strings.Repeat("long directory name/", 300) + "end",
	"replacement rune": "/tmp/\uFFFD/é",
}

// TestPlistRoundTrip writes a plist for gateways whose every path (and an
// environment value) is hostile, reads it back with a plist parser, and
// checks each key's value: nothing is lost, escaped twice or left raw.
func TestPlistRoundTrip(t *testing.T) {
	for name, h := range hostile {
		t.Run(name, func(t *testing.T) {
			g := base()
			g.Hermesd = filepath.Join(h, "bin", "hermesd")
			g.Config = filepath.Join(h, "hermes.yaml")
			g.Units = h + "/units"
			g.State = h + "/state"
			g.Socket = h + "/hermesd.sock"
			g.LogDir = h + "/logs"
			g.WorkDir = h
			g.Env = map[string]string{"PATH": h + ":/usr/bin:/bin", "HERMES_NOTE": h, "EMPTY": ""}
			doc, err := Plist(g)
			if err != nil {
				t.Fatalf("Plist: %v", err)
			}
			a, keys := parse(t, doc)
			checkAgent(t, a, g)
			want := []string{"AbandonProcessGroup", "EnvironmentVariables", "ExitTimeOut", "KeepAlive", "Label", "ProgramArguments",
				"RunAtLoad", "StandardErrorPath", "StandardOutPath", "ThrottleInterval", "WorkingDirectory"}
			if !slices.Equal(keys, want) {
				t.Errorf("keys = %q, want %q", keys, want)
			}
			lint(t, doc)
		})
	}
}

// checkAgent compares what the parser read with what g asked for.
func checkAgent(t *testing.T, a agent, g Gateway) {
	t.Helper()
	if a.Label != g.Label {
		t.Errorf("Label = %q, want %q", a.Label, g.Label)
	}
	// The flags are paths.Paths.Args's (TestArgs); here, that they cross
	// the plist unchanged.
	argv := append([]string{g.Hermesd}, paths.Paths{Config: g.Config, Units: g.Units, State: g.State, Socket: g.Socket}.Args()...)
	if !slices.Equal(a.ProgramArguments, argv) {
		t.Errorf("ProgramArguments =\n  %q\nwant\n  %q", a.ProgramArguments, argv)
	}
	if len(g.Env) > 0 && !maps.Equal(a.EnvironmentVariables, g.Env) {
		t.Errorf("EnvironmentVariables = %q, want %q", a.EnvironmentVariables, g.Env)
	}
	if a.WorkingDirectory != g.WorkDir {
		t.Errorf("WorkingDirectory = %q, want %q", a.WorkingDirectory, g.WorkDir)
	}
	if !a.RunAtLoad || !a.AbandonProcessGroup {
		t.Errorf("RunAtLoad = %v, AbandonProcessGroup = %v, want both true", a.RunAtLoad, a.AbandonProcessGroup)
	}
	if ok, set := a.KeepAlive["SuccessfulExit"]; len(a.KeepAlive) != 1 || !set || ok {
		t.Errorf("KeepAlive = %v, want {SuccessfulExit: false} (restart after a crash, not after a clean stop)", a.KeepAlive)
	}
	if a.ThrottleInterval != seconds(g.Throttle) || a.ExitTimeOut != seconds(g.ExitTimeout) {
		t.Errorf("ThrottleInterval = %d, ExitTimeOut = %d, want %d and %d", a.ThrottleInterval, a.ExitTimeOut, seconds(g.Throttle), seconds(g.ExitTimeout))
	}
	if want := filepath.Join(g.LogDir, StderrName); a.StandardErrorPath != want {
		t.Errorf("StandardErrorPath = %q, want %q", a.StandardErrorPath, want)
	}
	if want := filepath.Join(g.LogDir, StdoutName); a.StandardOutPath != want {
		t.Errorf("StandardOutPath = %q, want %q", a.StandardOutPath, want)
	}
}

// TestPlistOptionalKeys: what a Gateway leaves empty is not written, so
// launchd's own defaults apply, and --config and --socket are left out of
// ProgramArguments.
func TestPlistOptionalKeys(t *testing.T) {
	g := base()
	g.Throttle, g.ExitTimeout = 0, 1500*time.Millisecond
	doc, err := Plist(g)
	if err != nil {
		t.Fatal(err)
	}
	a, keys := parse(t, doc)
	checkAgent(t, a, g)
	if a.ExitTimeOut != 2 {
		t.Errorf("ExitTimeOut = %d for 1.5s, want 2 (rounded up)", a.ExitTimeOut)
	}
	want := []string{"AbandonProcessGroup", "ExitTimeOut", "KeepAlive", "Label", "ProgramArguments", "RunAtLoad", "StandardErrorPath", "StandardOutPath"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys = %q, want %q", keys, want)
	}
	lint(t, doc)
}

// TestPlistSaysWhatLaunchdCannot: the file's comment carries every
// limitation, so a reader of the plist alone learns them.
func TestPlistSaysWhatLaunchdCannot(t *testing.T) {
	doc, err := Plist(base())
	if err != nil {
		t.Fatal(err)
	}
	var comments strings.Builder
	d := xml.NewDecoder(bytes.NewReader(doc))
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if c, ok := tok.(xml.Comment); ok {
			comments.Write(c)
		}
	}
	text := strings.Join(strings.Fields(comments.String()), " ")
	for _, l := range Limitations {
		if !strings.Contains(text, l) {
			t.Errorf("the plist's comments do not say %q", l)
		}
	}
	if want := "launchctl bootout gui/$(id -u)/" + DefaultLabel + "."; !strings.Contains(text, want) {
		t.Errorf("the plist's comments do not say %q", want)
	}
	if !strings.Contains(text, "Owned children die through hermes's own death supervisor") {
		t.Error("no comment says why AbandonProcessGroup is true")
	}
}

// TestPlistRefuses: values the plist cannot carry as they are fail with
// ErrValue, naming the value; none is replaced or dropped.
func TestPlistRefuses(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Gateway)
		want   string
	}{
		{"relative hermesd", func(g *Gateway) { g.Hermesd = "bin/hermesd" }, `hermesd binary "bin/hermesd" is not an absolute path`},
		{"tilde units", func(g *Gateway) { g.Units = "~/units" }, `units directory "~/units" is not an absolute path`},
		{"relative log dir", func(g *Gateway) { g.LogDir = "logs" }, `log directory "logs" is not an absolute path`},
		{"relative workdir", func(g *Gateway) { g.WorkDir = "." }, `working directory "." is not an absolute path`},
		{"empty label", func(g *Gateway) { g.Label = "" }, `label ""`},
		{"label with a slash", func(g *Gateway) { g.Label = "a/b" }, `label "a/b"`},
		{"label with a space", func(g *Gateway) { g.Label = "my agent" }, `label "my agent"`},
		{"label with --", func(g *Gateway) { g.Label = "org.a--b" }, `label "org.a--b"`},
		{"label ending in a dot", func(g *Gateway) { g.Label = "org.a." }, `label "org.a."`},
		{"NUL", func(g *Gateway) { g.State = "/tmp/a\x00b" }, `holds U+0000 at byte 6`},
		{"escape character", func(g *Gateway) { g.Env = map[string]string{"X": "\x1b[0m"} }, `holds U+001B at byte 0`},
		{"U+FFFF", func(g *Gateway) { g.State = "/tmp/\uFFFF" }, `holds U+FFFF`},
		{"invalid UTF-8", func(g *Gateway) { g.State = "/tmp/\xff" }, `is not valid UTF-8 at byte 5`},
		{"encoded surrogate", func(g *Gateway) { g.State = "/tmp/\xed\xa0\x80" }, `is not valid UTF-8 at byte 5`},
		{"variable name with =", func(g *Gateway) { g.Env = map[string]string{"A=B": "c"} }, `environment variable name "A=B"`},
		{"empty variable name", func(g *Gateway) { g.Env = map[string]string{"": "c"} }, `environment variable name ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := base()
			tt.change(&g)
			doc, err := Plist(g)
			if !errors.Is(err, ErrValue) {
				t.Fatalf("Plist = %v, %q; want an error wrapping ErrValue", err, doc)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

// FuzzPlistRoundTrip: whatever Plist accepts as a path or a variable
// reads back unchanged; what it refuses, it refuses with ErrValue.
func FuzzPlistRoundTrip(f *testing.F) {
	for _, h := range hostile {
		f.Add(h, "PATH")
	}
	f.Add("/tmp/\x00", "A=B")
	f.Fuzz(func(t *testing.T, path, name string) {
		g := base()
		g.State = "/" + path
		g.WorkDir = "/" + path
		g.Env = map[string]string{name: path}
		doc, err := Plist(g)
		if err != nil {
			if !errors.Is(err, ErrValue) {
				t.Fatalf("Plist: %v, want ErrValue or nothing", err)
			}
			return
		}
		a, _ := parse(t, doc)
		checkAgent(t, a, g)
	})
}

// Package launchd builds the property list of the LaunchAgent that runs
// hermesd under launchd, the macOS service manager: Plist returns the XML
// document for a Gateway, and nothing here starts or talks to launchd.
//
// Only hermesd itself becomes a launchd job. Its units stay hermes's: it
// starts, restarts and kills them as it does on Linux, and launchd must
// leave them alone (AbandonProcessGroup).
//
// Every value is escaped for XML, so any path round-trips through a plist
// parser (launchd's, plutil's) unchanged. What XML 1.0 cannot carry at all
// (control characters other than tab and line breaks, invalid UTF-8) is
// refused with ErrValue rather than replaced; so is a relative path, which
// launchd would not resolve as the shell did (it expands neither ~ nor
// $VARIABLES, and runs the job in /).
package launchd

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hermes-units/hermes/internal/paths"
)

// ErrValue reports a value that the property list cannot carry as it is.
var ErrValue = errors.New("value cannot be written to a launchd property list")

// DefaultLabel is the Label of hermesd's job; the file is named after it.
const DefaultLabel = "org.hermes-units.hermesd"

// Log file names inside Gateway.LogDir: hermesd logs to stderr.
const (
	StderrName = "hermesd.log"
	StdoutName = "hermesd.out.log"
)

// Gateway describes hermesd's LaunchAgent. Paths must be absolute.
type Gateway struct {
	Label   string            // Label; the file is FileName(Label)
	Hermesd string            // the hermesd binary, ProgramArguments[0]
	Config  string            // --config; "" leaves it out (hermesd's default)
	Units   string            // --units
	State   string            // --state
	Socket  string            // --socket; "" leaves it out (hermesd's default)
	LogDir  string            // StandardErrorPath and StandardOutPath go here
	Env     map[string]string // EnvironmentVariables; empty leaves the key out
	WorkDir string            // WorkingDirectory; "" leaves launchd's (/)
	// Throttle is ThrottleInterval, the least time between two starts
	// (launchd's default is 10 s); 0 leaves the key out.
	Throttle time.Duration
	// ExitTimeout is ExitTimeOut, how long launchd waits after SIGTERM
	// before it sends SIGKILL (launchd's default is 20 s); 0 leaves the
	// key out.
	ExitTimeout time.Duration
}

// FileName is the file launchd expects for a job: its label and ".plist".
func FileName(label string) string { return label + ".plist" }

// labelRE is what Plist accepts as a Label: reverse-DNS words, so that the
// label is a plain file name and a word in launchctl's service targets
// (gui/UID/LABEL). No two separators in a row: the label is named in the
// file's comment, where "--" cannot stand.
var labelRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9]+([._-][A-Za-z0-9]+)*$`) })

// Limitations is what launchd cannot express of what hermesd gets under
// systemd (export systemd's hermesd.service), one sentence a line. The
// plist's comment and hermesctl's help both say it.
var Limitations = []string{
	"No readiness: launchd counts hermesd started once it is spawned; it has no READY=1 (Type=notify).",
	"No watchdog: a hung hermesd is not restarted, only one that exited.",
	"No cgroups: hermesd runs in pgroup mode and is no subreaper; orphans go to launchd, escapees are found by their group and tags.",
	"Restarts: KeepAlive restarts hermesd after a crash or a kill, not after a clean exit (status 0, as after TERM); ThrottleInterval is a fixed pause, with no backoff and no start limit.",
	"Logs: appended to forever, never rotated, and their directory must exist before the job is loaded.",
	"Paths: launchd expands neither ~ nor $VARIABLES; every path here is absolute, as it was when the file was written, and EnvironmentVariables is fixed too, not the login shell's.",
}

// Plist returns the XML property list of g's LaunchAgent, or an error
// wrapping ErrValue that names the value it cannot carry.
func Plist(g Gateway) ([]byte, error) {
	if err := validate(g); err != nil {
		return nil, err
	}
	argv := append([]string{g.Hermesd}, paths.Paths{Config: g.Config, Units: g.Units, State: g.State, Socket: g.Socket}.Args()...)
	e := &encoder{}
	e.header(g.Label)
	e.key("Label")
	e.str(1, g.Label)
	e.blank()
	e.key("ProgramArguments")
	e.line(1, "<array>")
	for _, a := range argv {
		e.str(2, a)
	}
	e.line(1, "</array>")
	if len(g.Env) > 0 {
		e.blank()
		e.key("EnvironmentVariables")
		e.line(1, "<dict>")
		for _, k := range slices.Sorted(maps.Keys(g.Env)) {
			if k == "" || strings.Contains(k, "=") {
				return nil, fmt.Errorf("%w: environment variable name %q: a name is not empty and holds no '='", ErrValue, k)
			}
			e.line(2, "<key>"+e.escape(k)+"</key>")
			e.str(2, g.Env[k])
		}
		e.line(1, "</dict>")
	}
	if g.WorkDir != "" {
		e.blank()
		e.key("WorkingDirectory")
		e.str(1, g.WorkDir)
	}
	e.blank()
	e.key("RunAtLoad")
	e.line(1, "<true/>")
	e.blank()
	e.comment(1,
		"Restart hermesd when it crashes or is killed; a clean exit (after TERM,",
		"status 0) leaves it stopped.")
	e.key("KeepAlive")
	e.line(1, "<dict>")
	e.line(2, "<key>SuccessfulExit</key>")
	e.line(2, "<false/>")
	e.line(1, "</dict>")
	if g.Throttle > 0 {
		e.key("ThrottleInterval")
		e.integer(1, seconds(g.Throttle))
	}
	if g.ExitTimeout > 0 {
		e.blank()
		e.comment(1,
			"On a stop (launchctl bootout), SIGTERM, then SIGKILL this long after:",
			"hermesd stops its units in that time, and if it is killed first its",
			"death supervisor kills the owned ones at once.")
		e.key("ExitTimeOut")
		e.integer(1, seconds(g.ExitTimeout))
	}
	e.blank()
	e.comment(1,
		"Owned children die through hermes's own death supervisor, not through",
		"launchd: it kills their groups the moment hermesd is gone, by any death",
		"(a crash, kill -9, a bootout). Adoptable and persist_on_release",
		"survivors must outlive hermesd and be re-adopted when launchd starts it",
		"again, so launchd must not kill what is left of hermesd's process group",
		"when hermesd exits. (Every unit leads its own process group and the",
		"supervisor its own session, out of reach of that kill already; this",
		"spares the rest of hermesd's group too.)")
	e.key("AbandonProcessGroup")
	e.line(1, "<true/>")
	e.blank()
	e.comment(1, "hermesd logs to stderr; units write their own log files under the", "state directory.")
	e.key("StandardErrorPath")
	e.str(1, filepath.Join(g.LogDir, StderrName))
	e.key("StandardOutPath")
	e.str(1, filepath.Join(g.LogDir, StdoutName))
	e.line(0, "</dict>")
	e.line(0, "</plist>")
	if e.err != nil {
		return nil, e.err
	}
	return e.b.Bytes(), nil
}

// validate refuses a label launchd or the file's comment cannot take and
// a path that is not absolute; checkText refuses the rest as it is written.
func validate(g Gateway) error {
	if !labelRE().MatchString(g.Label) {
		return fmt.Errorf("%w: label %q: use words of letters and digits joined by single '.', '-' or '_', e.g. %s", ErrValue, g.Label, DefaultLabel)
	}
	paths := []struct{ what, path string }{
		{"hermesd binary", g.Hermesd}, {"units directory", g.Units}, {"state directory", g.State}, {"log directory", g.LogDir},
	}
	for _, opt := range []struct{ what, path string }{{"config file", g.Config}, {"socket", g.Socket}, {"working directory", g.WorkDir}} {
		if opt.path != "" {
			paths = append(paths, opt)
		}
	}
	for _, p := range paths {
		if !filepath.IsAbs(p.path) {
			return fmt.Errorf("%w: %s %q is not an absolute path (launchd runs the job in / and expands no ~)", ErrValue, p.what, p.path)
		}
	}
	return nil
}

// seconds is d in whole seconds, rounded up: launchd's integers are
// seconds, and a bound must not shrink.
func seconds(d time.Duration) int64 {
	return int64(math.Ceil(d.Seconds()))
}

// encoder writes the XML of a property list line by line, indented with
// tabs as plutil writes it. The first value it cannot carry sets err; the
// rest is then ignored.
type encoder struct {
	b   bytes.Buffer
	err error
}

// header writes the XML declaration, the DOCTYPE, the comment that says
// how to install the file and what launchd cannot express, and opens the
// top-level dict. label is checked against labelRE.
func (e *encoder) header(label string) {
	e.b.WriteString(xml.Header)
	e.line(0, `<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">`)
	lines := []string{
		"Generated by hermesctl export launchd: hermesd, the hermes units gateway,",
		"as a launchd user agent (macOS). Install it with",
		"  cp " + FileName(label) + " ~/Library/LaunchAgents/",
		"  launchctl bootstrap gui/$(id -u) ~/Library/LaunchAgents/" + FileName(label),
		"and stop it with launchctl bootout gui/$(id -u)/" + label + ".",
		"",
		"What launchd cannot express:",
	}
	for _, l := range Limitations {
		lines = append(lines, wrap("- "+l, "  ", 74)...)
	}
	e.comment(0, lines...)
	e.line(0, `<plist version="1.0">`)
	e.line(0, "<dict>")
}

// wrap breaks s into lines of at most width bytes at spaces, the lines
// after the first indented by indent.
func wrap(s, indent string, width int) []string {
	var lines []string
	cur := ""
	for _, w := range strings.Fields(s) {
		switch {
		case cur == "":
			cur = w
		case len(cur)+1+len(w) > width:
			lines = append(lines, cur)
			cur = indent + w
		default:
			cur += " " + w
		}
	}
	return append(lines, cur)
}

func (e *encoder) line(depth int, s string) {
	e.b.WriteString(strings.Repeat("\t", depth) + s + "\n")
}

func (e *encoder) blank() { e.b.WriteByte('\n') }

func (e *encoder) key(name string) { e.line(1, "<key>"+e.escape(name)+"</key>") }

func (e *encoder) str(depth int, s string) { e.line(depth, "<string>"+e.escape(s)+"</string>") }

func (e *encoder) integer(depth int, n int64) {
	e.line(depth, "<integer>"+strconv.FormatInt(n, 10)+"</integer>")
}

// comment writes an XML comment. Its text is this package's own, never a
// value (a value could hold "--", which ends no comment but makes it
// invalid XML).
func (e *encoder) comment(depth int, lines ...string) {
	ind := strings.Repeat("\t", depth)
	if len(lines) == 1 {
		e.line(depth, "<!-- "+lines[0]+" -->")
		return
	}
	e.b.WriteString(ind + "<!--\n")
	for _, l := range lines {
		e.b.WriteString(strings.TrimRight(ind+"  "+l, " \t") + "\n")
	}
	e.b.WriteString(ind + "-->\n")
}

// escape returns s as XML character data: &, <, >, quotes and the line
// breaks and tabs a parser would otherwise normalise as character
// references. A rune XML 1.0 cannot carry sets e.err.
func (e *encoder) escape(s string) string {
	if e.err == nil {
		e.err = checkText(s)
	}
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}

// checkText refuses what XML 1.0 cannot carry (its Char production):
// invalid UTF-8 (encoded surrogates included), NUL and the other C0
// controls but tab, LF and CR, U+FFFE and U+FFFF. encoding/xml would write
// U+FFFD instead, and the value would not round-trip.
func checkText(s string) error {
	for i, r := range s {
		if r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD") {
			return fmt.Errorf("%w: %q is not valid UTF-8 at byte %d", ErrValue, s, i)
		}
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0xFFFE || r == 0xFFFF {
			return fmt.Errorf("%w: %q holds %U at byte %d, which XML cannot carry", ErrValue, s, r, i)
		}
	}
	return nil
}

// Package systemdunit turns hermes units into systemd user units with the
// same semantics, for users who would rather have systemd supervise their
// services (hermesctl export systemd), and writes the hermesd.service that
// runs the gateway itself under systemd.
//
// Files builds the files of one unit: NAME.service, plus NAME.timer for a
// unit with a schedule. Gateway builds hermesd.service. Write puts files
// in a directory atomically. Nothing here starts or talks to systemd.
//
// What systemd cannot express is said in a comment inside the file
// (readiness probes other than notify, port checks, log rotation, the
// run budget's wrap-up notice), never silently dropped. What systemd would
// do differently enough to surprise is refused with an error: a schedule
// with no exact OnCalendar= equivalent (ErrSchedule), a unit name systemd
// reads otherwise (ErrName), a value a unit file line cannot carry
// (ErrValue).
package systemdunit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/unit"
	"github.com/hermes-units/hermes/internal/paths"
	"github.com/hermes-units/hermes/units"
)

var (
	// ErrSchedule reports a schedule with no exact OnCalendar= equivalent.
	ErrSchedule = errors.New("schedule has no exact systemd calendar equivalent")
	// ErrName reports a unit name that systemd would read as something
	// else (a template), or that clashes with hermesd.service.
	ErrName = errors.New("unit name cannot be exported as a systemd unit name")
	// ErrValue reports a value that a unit file line cannot carry.
	ErrValue = errors.New("value cannot be written to a unit file")
	// ErrExists reports a file that Write would overwrite without force.
	ErrExists = errors.New("file already exists")
)

// GatewayName is the file name of the gateway's own unit.
const GatewayName = "hermesd.service"

// File is one unit file: its base name ("web.service", "web.timer") and
// its content.
type File struct {
	Name    string
	Content []byte
}

// Options shape the files of units.
type Options struct {
	// StateDir is hermes's state directory: a unit's log defaults to
	// StateDir/logs/NAME.log, as under hermesd.
	StateDir string
	// LookPath resolves a command name without a slash to an absolute
	// path (systemd searches only its own fixed PATH). nil, or an error
	// from it, leaves the name as is.
	LookPath func(string) (string, error)
}

// section names.
const (
	secUnit    = "Unit"
	secService = "Service"
	secTimer   = "Timer"
	secInstall = "Install"
)

// builder collects options in section order, with comment lines to write
// above some of them and above the whole file.
type builder struct {
	header   []string
	opts     []*unit.UnitOption
	comments map[*unit.UnitOption][]string
}

// add appends an option; comment lines (without "# ") go right above it.
func (b *builder) add(section, name, value string, comment ...string) {
	o := unit.NewUnitOption(section, name, value)
	b.opts = append(b.opts, o)
	if len(comment) > 0 {
		if b.comments == nil {
			b.comments = map[*unit.UnitOption][]string{}
		}
		b.comments[o] = comment
	}
}

// bytes serializes the options with unit.Serialize and inserts the
// comments. Options must have been added grouped by section (Serialize
// groups them by first appearance), so the n-th option line of the output
// is b.opts[n]; values never hold a line break (see plain, quoteWord).
func (b *builder) bytes() ([]byte, error) {
	var out bytes.Buffer
	for _, h := range b.header {
		out.WriteString(strings.TrimRight("# "+h, " ") + "\n")
	}
	if len(b.header) > 0 {
		out.WriteByte('\n')
	}
	body, err := io.ReadAll(unit.Serialize(b.opts))
	if err != nil {
		return nil, err
	}
	n := 0
	for _, line := range strings.SplitAfter(string(body), "\n") {
		if line != "" && line != "\n" && !strings.HasPrefix(line, "[") {
			if n >= len(b.opts) {
				return nil, errors.New("systemdunit: serialized more lines than options")
			}
			for _, c := range b.comments[b.opts[n]] {
				out.WriteString(strings.TrimRight("# "+c, " ") + "\n")
			}
			n++
		}
		out.WriteString(line)
	}
	return out.Bytes(), nil
}

// ServiceName is the systemd unit name of a hermes unit.
func ServiceName(unitName string) string { return unitName + ".service" }

// Files returns the systemd files of one unit: NAME.service, and for a
// job (a unit with a schedule) NAME.timer. The service has the unit's
// semantics as far as systemd has them: the command (argv quoted, a shell
// unit run by /bin/sh -c), working directory, environment, restart policy
// with exponential backoff, start limit, readiness (Type=notify for
// ready.notify, else Type=exec), timeouts, stop signal, dependencies, log
// file, description. A job's service is started by its timer and has no
// [Install] section.
//
// Errors wrap ErrName, ErrValue or ErrSchedule and name the unit.
func Files(s *units.Spec, o Options) ([]File, error) {
	if err := checkName(s.Name); err != nil {
		return nil, err
	}
	svc, err := service(s, o)
	if err != nil {
		return nil, fmt.Errorf("unit %s: %w", s.Name, err)
	}
	files := []File{{Name: ServiceName(s.Name), Content: svc}}
	if s.IsJob() {
		t, err := timer(s)
		if err != nil {
			return nil, fmt.Errorf("unit %s: %w", s.Name, err)
		}
		files = append(files, File{Name: s.Name + ".timer", Content: t})
	}
	return files, nil
}

// checkName refuses names systemd reads as templates ("x@"), names with
// more than one "@", and the gateway's own name.
func checkName(name string) error {
	switch {
	case name == "hermesd":
		return fmt.Errorf("unit hermesd: %w: hermesd.service is the gateway's own unit; rename the unit file", ErrName)
	case strings.HasSuffix(name, "@") || strings.Count(name, "@") > 1:
		return fmt.Errorf("unit %s: %w: systemd reads it as a template; rename the unit file", name, ErrName)
	}
	return nil
}

func service(s *units.Spec, o Options) ([]byte, error) {
	b := &builder{header: []string{
		"Generated by hermesctl export systemd from " + s.File + ".",
		"Edit the unit file and export again (--force) rather than this file.",
	}}
	if s.Ownership != units.Owned && s.Ownership != "" {
		b.header = append(b.header, "",
			fmt.Sprintf("ownership: %s (reason: %s).", s.Ownership, oneLine(s.Reason)),
			"Under systemd every unit is its own service and outlives any other",
			"process; systemctl --user stop still stops it.")
	}
	unitSection(b, s)
	if err := serviceSection(b, s, o); err != nil {
		return nil, err
	}
	if !s.IsJob() {
		b.add(secInstall, "WantedBy", "default.target")
	}
	return b.bytes()
}

func unitSection(b *builder, s *units.Spec) {
	desc := oneLine(s.Description)
	if desc == "" {
		desc = "hermes unit " + s.Name
	}
	b.add(secUnit, "Description", desc)
	if s.File != "" {
		doc := (&url.URL{Scheme: "file", Path: s.File}).String()
		b.add(secUnit, "Documentation", strings.ReplaceAll(doc, "%", "%%"))
	}
	for _, d := range s.After {
		b.add(secUnit, "After", ServiceName(d))
	}
	for _, d := range s.Requires {
		// hermes starts a unit only after what it requires is ready:
		// Requires= alone would start both at once.
		if !slices.Contains(s.After, d) {
			b.add(secUnit, "After", ServiceName(d))
		}
		b.add(secUnit, "Requires", ServiceName(d))
	}
	if s.StartLimit.Burst > 0 {
		b.add(secUnit, "StartLimitIntervalSec", span(s.StartLimit.Interval))
		b.add(secUnit, "StartLimitBurst", fmt.Sprint(s.StartLimit.Burst))
	}
}

func serviceSection(b *builder, s *units.Spec, o Options) error {
	typ, typeNote := "exec", readyNote(s.Ready)
	switch s.Type {
	case units.Oneshot:
		typ, typeNote = "oneshot", nil // a oneshot has no probe: done at exit 0, as in systemd
	case units.Forking:
		typ = "forking" // the launcher's exit 0 is the start; a probe has no equivalent (readyNote)
	default:
		if s.Ready.Notify {
			typ = "notify"
		}
	}
	b.add(secService, "Type", typ, typeNote...)
	if s.Type == units.Oneshot && s.RemainAfter {
		b.add(secService, "RemainAfterExit", "yes")
	}
	if s.Type == units.Forking && s.PIDFile != "" {
		v, err := plain("PIDFile", s.PIDFile)
		if err != nil {
			return err
		}
		b.add(secService, "PIDFile", v)
	}
	exec, err := execStart(s, o)
	if err != nil {
		return err
	}
	b.add(secService, "ExecStart", exec)
	wd := s.Workdir
	if wd == "" && s.File != "" {
		wd = filepath.Dir(s.File)
	}
	if wd != "" {
		v, err := plain("WorkingDirectory", wd)
		if err != nil {
			return err
		}
		b.add(secService, "WorkingDirectory", v)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		b.add(secService, "Environment", quoteWord(k+"="+s.Env[k]))
	}
	if err := execOpts(b, s); err != nil {
		return err
	}
	restartOpts(b, s)
	timeoutOpts(b, s)
	if s.StopSignal != 0 {
		b.add(secService, "KillSignal", signalName(s.StopSignal))
	}
	return logOpts(b, s, o)
}

// readyNote explains a readiness probe systemd has no equivalent for.
func readyNote(r units.Ready) []string {
	var probe string
	switch {
	case r.TCP != "":
		probe = "tcp " + r.TCP
	case r.HTTP != "":
		probe = "http " + r.HTTP
	case r.Log != "":
		probe = "log line " + r.Log
	default:
		return nil
	}
	return []string{
		"ready: " + probe + " has no systemd equivalent: the unit counts as started",
		"once its program runs (Type=exec), not once the probe answers.",
	}
}

func execStart(s *units.Spec, o Options) (string, error) {
	argv := s.Argv()
	if len(argv) == 0 {
		return "", fmt.Errorf("%w: no command", ErrValue)
	}
	if !strings.Contains(argv[0], "/") && o.LookPath != nil {
		if p, err := o.LookPath(argv[0]); err == nil && filepath.IsAbs(p) {
			argv[0] = p
		}
	}
	if strings.ContainsAny(argv[0][:1], "@-:+!") {
		return "", fmt.Errorf("%w: command %q starts with %q, an ExecStart= prefix; use its path", ErrValue, argv[0], argv[0][:1])
	}
	words := make([]string, len(argv))
	for i, w := range argv {
		words[i] = execWord(w)
	}
	return strings.Join(words, " "), nil
}

func restartOpts(b *builder, s *units.Spec) {
	r := s.Restart
	if r == "" {
		r = units.RestartNo
	}
	b.add(secService, "Restart", string(r))
	if r == units.RestartNo {
		return
	}
	if s.RestartSec > 0 {
		b.add(secService, "RestartSec", span(s.RestartSec))
	}
	if s.RestartSec > 0 && s.RestartMax > s.RestartSec {
		// hermes doubles the delay from restart_sec up to restart_max_sec;
		// systemd grows it exponentially over RestartSteps steps.
		steps := int(math.Ceil(math.Log2(float64(s.RestartMax) / float64(s.RestartSec))))
		b.add(secService, "RestartSteps", fmt.Sprint(steps),
			"Backoff doubling from RestartSec to RestartMaxDelaySec, as hermes does",
			"(systemd 254 or later; older versions ignore these two settings).")
		b.add(secService, "RestartMaxDelaySec", span(s.RestartMax))
	}
}

func timeoutOpts(b *builder, s *units.Spec) {
	t := s.Timeouts
	if s.Type == units.Oneshot {
		// hermes bounds a oneshot's run by runtime_max, never by the start
		// timeout. systemd bounds it by TimeoutStartSec= (RuntimeMaxSec=
		// has no effect on Type=oneshot; systemd-analyze verify says so).
		v := "infinity"
		if t.RuntimeMax > 0 {
			v = span(t.RuntimeMax)
		}
		b.add(secService, "TimeoutStartSec", v, "A oneshot's whole run: hermes's timeouts.runtime_max.")
		t.RuntimeMax = 0
	} else if t.Start > 0 {
		b.add(secService, "TimeoutStartSec", span(t.Start))
	} else {
		b.add(secService, "TimeoutStartSec", "infinity")
	}
	if t.Stop > 0 {
		b.add(secService, "TimeoutStopSec", span(t.Stop))
	}
	runtimeMax, note := t.RuntimeMax, []string(nil)
	if s.RunBudget > 0 && (runtimeMax == 0 || s.RunBudget < runtimeMax) {
		runtimeMax = s.RunBudget
		note = []string{"run_budget_seconds; the wrap-up notice at 80 % of the budget has no systemd equivalent."}
	}
	if runtimeMax > 0 {
		b.add(secService, "RuntimeMaxSec", span(runtimeMax), note...)
	}
	if t.Watchdog > 0 {
		b.add(secService, "WatchdogSec", span(t.Watchdog))
	}
}

func logOpts(b *builder, s *units.Spec, o Options) error {
	path := s.Log.Path
	if path == "" && o.StateDir != "" {
		path = filepath.Join(o.StateDir, "logs", s.Name+".log")
	}
	if path == "" {
		return nil
	}
	v, err := plain("log path", path)
	if err != nil {
		return err
	}
	var note []string
	if s.Log.MaxSize > 0 {
		note = []string{fmt.Sprintf("log: systemd appends without rotating (hermes rotates at %s, keeping %d).", s.Log.MaxSize, s.Log.Keep)}
	}
	b.add(secService, "StandardOutput", "append:"+v, note...)
	b.add(secService, "StandardError", "append:"+v)
	return nil
}

// signalName is "SIGTERM" for named signals, the number otherwise.
func signalName(sig units.Signal) string {
	n := sig.String()
	if strings.IndexFunc(n, func(r rune) bool { return r < '0' || r > '9' }) < 0 {
		return n
	}
	return "SIG" + n
}

func timer(s *units.Spec) ([]byte, error) {
	cal, err := OnCalendar(s.Schedule)
	if err != nil {
		return nil, err
	}
	b := &builder{header: []string{
		"Generated by hermesctl export systemd from " + s.File + ".",
		"Starts " + ServiceName(s.Name) + " on its schedule.",
	}}
	b.add(secUnit, "Description", "Schedule of "+oneLine(s.Name))
	b.add(secTimer, "OnCalendar", cal, "schedule: "+s.Schedule)
	b.add(secTimer, "AccuracySec", "1s", "cron fires on the minute; systemd's default accuracy is a minute.")
	b.add(secTimer, "Unit", ServiceName(s.Name))
	b.add(secInstall, "WantedBy", "timers.target")
	return b.bytes()
}

// Gateway describes the hermesd.service to write.
type Gateway struct {
	Hermesd  string        // absolute path of the hermesd binary
	Config   string        // --config, "" to leave it out
	Units    string        // --units
	State    string        // --state
	Socket   string        // --socket, "" to leave it out (hermesd's default)
	Watchdog time.Duration // WatchdogSec; 0 for none (hermesd pings at half of it)
}

// GatewayFile returns hermesd.service: hermesd as a Type=notify user
// service restarted on failure, with KillMode=process and Delegate=yes.
func GatewayFile(g Gateway) (File, error) {
	if !filepath.IsAbs(g.Hermesd) {
		return File{}, fmt.Errorf("%w: hermesd path %q is not absolute", ErrValue, g.Hermesd)
	}
	argv := append([]string{g.Hermesd}, paths.Paths{Config: g.Config, Units: g.Units, State: g.State, Socket: g.Socket}.Args()...)
	words := make([]string, len(argv))
	for i, w := range argv {
		words[i] = execWord(w)
	}
	b := &builder{header: []string{
		"Generated by hermesctl export systemd.",
		"hermesd, the hermes units gateway, run by the systemd user manager.",
	}}
	b.add(secUnit, "Description", "hermes units gateway (hermesd)")
	b.add(secService, "Type", "notify", "hermesd sends READY=1 once every unit has started, and STATUS= lines.")
	b.add(secService, "ExecStart", strings.Join(words, " "))
	b.add(secService, "KillMode", "process",
		"Only hermesd itself is signalled on stop. Owned children die through",
		"hermes's own supervisor (it kills their groups the moment hermesd is",
		"gone, by any death), while adoptable and persist_on_release survivors",
		"must outlive a stop and be re-adopted at the next start: the default",
		"KillMode=control-group would kill them along with hermesd.")
	b.add(secService, "Delegate", "yes",
		"cgroup mode: hermesd puts every owned unit in its own cgroup, so that",
		"daemons that leave their process group still die with their unit.")
	b.add(secService, "Restart", "on-failure")
	b.add(secService, "RestartSec", "1s")
	if g.Watchdog > 0 {
		b.add(secService, "WatchdogSec", span(g.Watchdog))
	}
	b.add(secInstall, "WantedBy", "default.target")
	c, err := b.bytes()
	if err != nil {
		return File{}, err
	}
	return File{Name: GatewayName, Content: c}, nil
}

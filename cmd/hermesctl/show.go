package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/spf13/cobra"
)

// showOptions are the flags and arguments of show, and where it prints.
type showOptions struct {
	clientOptions
	units []string
	props []string // -p: the properties to print, in that order; none: all
	value bool     // --value
}

func newShowCmd(g *globals) *cobra.Command {
	opts := &showOptions{clientOptions: clientOptions{g: g, unknownExit: exitcode.HermesctlUnknownUnit}}
	cmd := opts.unitsCommand(&cobra.Command{
		Use:   "show [-p PROPERTY,...] [--value] UNIT...",
		Short: "Print units' properties as KEY=value lines, as systemctl show",
		Long: `Print each unit's properties, one KEY=value line each, with systemctl's
names where systemd has the property, from what hermesd's status says; a
blank line separates units. -p (repeated, or comma-separated) prints those
properties alone, in the order given; --value prints the values alone.
An empty value is a property that does not apply (no main process, no
exit yet). A unit hermesd does not know exits 4, as status does.

` + propertyHelp,
		Args: cobra.MinimumNArgs(1),
	}, &opts.units, func(ctx context.Context) error { return runShow(ctx, opts) })
	cmd.Flags().StringSliceVarP(&opts.props, "property", "p", nil, "print only these properties (repeat, or separate with commas)")
	cmd.Flags().BoolVar(&opts.value, "value", false, "print the values alone, without KEY=")
	return cmd
}

// propertyHelp lists the properties, as show's help says them.
const propertyHelp = `Properties:
  Id                      the unit's name
  Description             its description:
  Type                    simple, oneshot or forking
  Ownership               owned, adoptable or persist_on_release (hermes's)
  LoadState               loaded; error: its file did not load (LoadError says why)
  LoadError               why its file did not load
  ActiveState             active, activating, deactivating, failed, inactive (is-active's word)
  SubState                hermes's state: running, starting, done, exited, failed...
  Result                  success; exit-code: it failed with a non-zero exit status;
                          failed: it failed otherwise (StatusText says how)
  UnitFileState           enabled, disabled (hermesctl disable) or masked
                          (hermesctl mask)
  FragmentPath            its unit file
  MainPID                 its main process; 0: none
  ProcessGroup            its process group; 0: none (hermes's)
  ControlGroup            its cgroup, in cgroup mode
  ExecMainStartTimestamp  when its main process started
  ExecMainStatus          the exit status of its latest run's leader, 128+N for
                          signal N as the shell says it
  NRestarts               restarts since hermesd started it
  StatusText              its last error
  Requires, After         the units of requires: and after:, space-separated
  Ready                   yes once its probe passed (running, without one)
  ReadyProbe              its probe in words: tcp 127.0.0.1:8080, notify...
  TimeoutStartUSec, TimeoutStopUSec, RuntimeMaxUSec
                          its timeouts in force (infinity: none)
  Ports                   the ports it declares, space-separated
  Schedule                a job's schedule
  NextRunTimestamp        a job's next run`

// propertyNames are the properties show prints, in its order.
var propertyNames = []string{
	"Id", "Description", "Type", "Ownership", "LoadState", "LoadError", "ActiveState", "SubState", "Result",
	"UnitFileState", "FragmentPath", "MainPID", "ProcessGroup", "ControlGroup", "ExecMainStartTimestamp",
	"ExecMainStatus", "NRestarts", "StatusText", "Requires", "After", "Ready", "ReadyProbe",
	"TimeoutStartUSec", "TimeoutStopUSec", "RuntimeMaxUSec", "Ports", "Schedule", "NextRunTimestamp",
}

// runShow prints the properties of each unit named.
func runShow(ctx context.Context, opts *showOptions) error {
	want, err := chosenProperties(opts.props)
	if err != nil {
		return err
	}
	return withClient(opts.g, func(c *control.Client) error {
		st, err := c.Status(ctx, opts.units...)
		if errors.Is(err, control.ErrUnknownUnit) {
			return &exitError{code: exitcode.HermesctlUnknownUnit, err: fmt.Errorf("show: %w; `hermesctl status` lists the units hermesd knows", err)}
		}
		if err != nil {
			return fmt.Errorf("show: %w", err)
		}
		files, _ := unitFiles(st.Daemon.Units) // no directory: no FragmentPath
		now := time.Now()
		for i, name := range opts.units {
			u, ok := firstRow(st, name)
			if !ok {
				return &exitError{code: exitcode.HermesctlUnknownUnit, err: fmt.Errorf("show %s: %w", name, control.ErrUnknownUnit)}
			}
			if i > 0 {
				fmt.Fprintln(opts.out)
			}
			writeProperties(opts.out, unitProperties(u, fileOf(files, name), now), want, opts.value)
		}
		return nil
	})
}

// chosenProperties are the properties -p names, each once, in the order
// given; none: all. An unknown name is a usage error.
func chosenProperties(props []string) ([]string, error) {
	if len(props) == 0 {
		return propertyNames, nil
	}
	var out []string
	for _, p := range props {
		p = strings.TrimSpace(p)
		if !slices.Contains(propertyNames, p) {
			return nil, &exitError{code: exitcode.Usage, err: fmt.Errorf("show: unknown property %q; `hermesctl show --help` lists them", p)}
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// writeProperties prints the properties want of props, as KEY=value
// lines, or their values alone.
func writeProperties(w io.Writer, props map[string]string, want []string, value bool) {
	for _, k := range want {
		v := inert(props[k])
		if value {
			fmt.Fprintln(w, v)
			continue
		}
		fmt.Fprintf(w, "%s=%s\n", k, v)
	}
}

// firstRow is the first row of name in st: the unit's, before a group it
// released.
func firstRow(st control.Status, name string) (control.Unit, bool) {
	for _, u := range st.Units {
		if u.Name == name {
			return u, true
		}
	}
	return control.Unit{}, false
}

// fileOf is the unit file of name among files; "" when none.
func fileOf(files []unitFile, name string) string {
	for _, f := range files {
		if f.name == name {
			return f.path
		}
	}
	return ""
}

// unitProperties are u's properties by name (propertyNames); file is its
// unit file, "" when none (an adopted group); now dates the start of its
// main process from its uptime.
func unitProperties(u control.Unit, file string, now time.Time) map[string]string {
	p := map[string]string{
		"Id":           u.Name,
		"Description":  u.Description,
		"Type":         string(u.Type),
		"Ownership":    string(u.Ownership),
		"LoadState":    "loaded",
		"ActiveState":  activityOf(u).String(),
		"SubState":     string(u.State),
		"Result":       "success",
		"FragmentPath": file,
		"MainPID":      strconv.Itoa(u.PID),
		"ProcessGroup": strconv.Itoa(u.PGID),
		"ControlGroup": u.Cgroup,
		"NRestarts":    strconv.Itoa(u.Restarts),
		"StatusText":   u.Error,
		"Requires":     strings.Join(u.Requires, " "),
		"After":        strings.Join(u.After, " "),
		"Ready":        yesNo(u.Ready),
		"ReadyProbe":   u.Probe,
	}
	if u.State == control.StateError {
		p["LoadState"], p["LoadError"] = "error", u.Error
	}
	if file != "" {
		p["UnitFileState"] = "enabled"
		if u.Disabled {
			p["UnitFileState"] = "disabled"
		}
		if u.Masked {
			p["UnitFileState"] = "masked"
		}
	}
	if u.ExitStatus != nil {
		p["ExecMainStatus"] = strconv.Itoa(*u.ExitStatus)
	}
	if activityOf(u) == actFailed {
		p["Result"] = "failed"
		if u.ExitStatus != nil && *u.ExitStatus != 0 {
			p["Result"] = "exit-code"
		}
	}
	if u.PID != 0 && u.Uptime > 0 {
		p["ExecMainStartTimestamp"] = timestamp(now.Add(-u.Uptime))
	}
	if t := u.Timeouts; t != nil {
		p["TimeoutStartUSec"], p["TimeoutStopUSec"], p["RuntimeMaxUSec"] = timespan(t.Start), timespan(t.Stop), timespan(t.RuntimeMax)
	}
	ports := make([]string, len(u.Ports))
	for i, port := range u.Ports {
		ports[i] = strconv.Itoa(port)
	}
	p["Ports"] = strings.Join(ports, " ")
	if j := u.Job; j != nil {
		p["Schedule"] = j.Schedule
		if !j.Next.IsZero() {
			p["NextRunTimestamp"] = timestamp(j.Next)
		}
	}
	return p
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// timestamp is t as systemctl show writes one: "Sat 2026-12-05 14:00:00
// UTC", in local time, to the second.
func timestamp(t time.Time) string {
	return t.Local().Truncate(time.Second).Format("Mon 2006-01-02 15:04:05 MST")
}

// timespan is d as systemctl show writes a time span: "1min 30s",
// "500ms"; "infinity" for none (0).
func timespan(d time.Duration) string {
	if d <= 0 {
		return "infinity"
	}
	var parts []string
	for _, u := range []struct {
		name string
		d    time.Duration
	}{{"h", time.Hour}, {"min", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}, {"us", time.Microsecond}} {
		if n := d / u.d; n > 0 {
			parts = append(parts, fmt.Sprintf("%d%s", n, u.name))
			d -= n * u.d
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " ")
}

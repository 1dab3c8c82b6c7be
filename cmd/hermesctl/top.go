package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/events"
	"github.com/hermes-units/hermes/internal/exitcode"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// The full-screen view (`hermesctl top`) is built on bubbletea v1, the
// Elm-style TUI library, with lipgloss for styles. It is driven by the
// daemon's event stream: each event (and each second, for uptimes, CPU
// and RSS) refreshes the status; CPU time is read from /proc with package
// proc, at most once a second, as status reads RSS.

// ErrNoTerminal: top was run without a terminal.
var ErrNoTerminal = errors.New("hermesctl top needs a terminal")

// topOptions are the terminal top draws on (out) and reads keys from
// (in); it takes no flags.
type topOptions struct{ clientOptions }

func newTopCmd(g *globals) *cobra.Command {
	opts := &topOptions{clientOptions{g: g}}
	return opts.command(&cobra.Command{
		Use:   "top",
		Short: "Full-screen view of units, their logs and the provider proxy, with keys to steer them",
		Long: "A full-screen view that follows hermesd's events: every unit with its state,\n" +
			"readiness, pid, uptime, restarts, CPU %, RSS and ownership; the log of the\n" +
			"selected unit, followed; the provider proxy's sessions, breaker streaks and\n" +
			"last cuts. Keys: ↑/↓ select, s start, x stop, r restart, d restart with the\n" +
			"units that require it, a restart all, l reload, / filter, o open the log in\n" +
			"$PAGER, ? help, q quit. Without a terminal, use `hermesctl status --watch` or\n" +
			"`hermesctl events -f`.",
		Args: cobra.NoArgs,
	}, func(ctx context.Context, _ []string) error {
		return runTop(ctx, opts)
	})
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), ioctlGetTermios)
	return err == nil
}

// runTop runs the view until q, ctrl+c or ctx's end. It owns the event
// follower and the log follower, and joins them before it returns. Without
// a terminal it fails at once, a usage error, before it dials hermesd.
func runTop(ctx context.Context, opts *topOptions) error {
	g, in, out := opts.g, opts.in, opts.out
	if !isTerminal(in) || !isTerminal(out) {
		return &exitError{code: exitcode.Usage, err: fmt.Errorf("%w (stdin and stdout must be one); for a table redrawn on each change run `hermesctl status --watch`, for a stream of changes `hermesctl events -f`", ErrNoTerminal)}
	}
	c, err := dial(g)
	if err != nil {
		return err
	}
	defer c.Close()
	// Fail early, before the screen is taken, when hermesd does not answer.
	st, err := c.Status(ctx)
	if err != nil {
		return fmt.Errorf("top: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := newTopModel(c, st)
	p := tea.NewProgram(m, tea.WithAltScreen(), tea.WithInput(in), tea.WithOutput(out), tea.WithContext(ctx))
	m.logs = &logFollower{send: p.Send, want: make(chan string, 1)}
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = followEvents(ctx, g, func(e events.Event) error {
			p.Send(eventMsg(e))
			return nil
		}, nil)
	})
	wg.Go(func() { m.logs.run(ctx, c) })
	_, err = p.Run()
	cancel()
	wg.Wait()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// Messages.
type (
	eventMsg  events.Event
	statusMsg struct {
		st  control.Status
		cpu map[int]float64 // pgid → CPU %; nil: keep the last
		err error
	}
	tickMsg    time.Time
	logLineMsg struct {
		unit, line string
	}
	actionMsg struct {
		text string
		err  error
	}
	pagerDoneMsg struct{ err error }
)

// logLines is how many lines of the selected unit's log are kept.
const logLines = 200

// maxCuts is how many of the last cuts the proxy pane keeps.
const maxCuts = 5

// topModel is the view's state; bubbletea calls its methods on one
// goroutine.
type topModel struct {
	c    *control.Client
	logs *logFollower
	cpu  *cpuSampler

	st       control.Status
	cpuPct   map[int]float64
	cuts     []events.Event
	lastErr  string
	sel      string // the selected unit's name
	filter   string
	editing  bool // typing the filter
	help     bool
	message  string
	log      []string
	logUnit  string
	width    int
	height   int
	quitting bool
	// A status read is in flight; dirty: an event came meanwhile, so read
	// again once it is in. A burst of events (the history at start, a
	// reload) is a few reads, not one per event.
	reading, dirty bool
}

func newTopModel(c *control.Client, st control.Status) *topModel {
	m := &topModel{c: c, st: st, cpu: &cpuSampler{last: map[int]cpuSample{}}, width: 100, height: 30}
	if us := m.visible(); len(us) > 0 {
		m.sel = us[0].Name
	}
	return m
}

func (m *topModel) Init() tea.Cmd {
	m.followSelected()
	return tea.Batch(m.refresh(true), tick())
}

// changed asks for a status read after an event, unless one is in flight.
func (m *topModel) changed() tea.Cmd {
	if m.reading {
		m.dirty = true
		return nil
	}
	return m.refresh(false)
}

func tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// refresh reads the status off the UI goroutine; withCPU samples CPU time
// too (the once-a-second tick).
func (m *topModel) refresh(withCPU bool) tea.Cmd {
	m.reading = true
	c, cpu := m.c, m.cpu
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := c.Status(ctx)
		msg := statusMsg{st: st, err: err}
		if err == nil && withCPU {
			msg.cpu = cpu.sample(st.Units, time.Now())
		}
		return msg
	}
}

func (m *topModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tea.KeyMsg:
		return m, m.key(msg)
	case eventMsg:
		e := events.Event(msg)
		if e.Kind == events.Cut {
			m.cuts = append(m.cuts, e)
			if len(m.cuts) > maxCuts {
				m.cuts = m.cuts[len(m.cuts)-maxCuts:]
			}
		}
		return m, m.changed()
	case statusMsg:
		m.reading = false
		var again tea.Cmd
		if m.dirty {
			m.dirty = false
			again = m.refresh(false)
		}
		if msg.err != nil {
			m.lastErr = inert(msg.err.Error())
			return m, again
		}
		m.lastErr = ""
		m.st = msg.st
		if msg.cpu != nil {
			m.cpuPct = msg.cpu
		}
		m.keepSelection()
		return m, again
	case tickMsg:
		return m, tea.Batch(m.refresh(true), tick())
	case logLineMsg:
		if msg.unit == m.logUnit {
			m.log = append(m.log, msg.line)
			if len(m.log) > logLines {
				m.log = m.log[len(m.log)-logLines:]
			}
		}
	case actionMsg:
		m.message = msg.text
		if msg.err != nil {
			m.message = inert(msg.err.Error())
		}
		return m, m.changed()
	case pagerDoneMsg:
		if msg.err != nil {
			m.message = "pager: " + msg.err.Error()
		}
	}
	return m, nil
}

// key handles a key press.
func (m *topModel) key(k tea.KeyMsg) tea.Cmd {
	if m.editing {
		switch k.Type {
		case tea.KeyEnter:
			m.editing = false
		case tea.KeyEsc:
			m.editing, m.filter = false, ""
		case tea.KeyBackspace:
			if r := []rune(m.filter); len(r) > 0 {
				m.filter = string(r[:len(r)-1])
			}
		case tea.KeyRunes, tea.KeySpace:
			m.filter += string(k.Runes)
		}
		m.keepSelection()
		return nil
	}
	if k.Type == tea.KeyRunes && len(k.Runes) > 1 && !k.Paste {
		// Keys typed faster than the terminal is read arrive together
		// ("jj"): each is a key.
		var cmds []tea.Cmd
		for _, r := range k.Runes {
			cmds = append(cmds, m.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}, Alt: k.Alt}))
		}
		return tea.Sequence(cmds...)
	}
	switch k.String() {
	case "q", "ctrl+c":
		m.quitting = true
		return tea.Quit
	case "up", "k":
		m.move(-1)
	case "down", "j":
		m.move(1)
	case "?":
		m.help = !m.help
	case "/":
		m.editing = true
	case "esc":
		m.filter = ""
		m.keepSelection()
	case "s":
		return m.act("start", m.sel)
	case "x":
		return m.act("stop", m.sel)
	case "r":
		return m.act("restart", m.sel)
	case "d":
		return m.restartWithDependents(m.sel)
	case "a":
		return m.restartAll()
	case "l":
		return m.reload()
	case "o", "enter":
		return m.openLog()
	}
	return nil
}

// visible is the units the filter lets through, in status order.
func (m *topModel) visible() []control.Unit {
	var out []control.Unit
	for _, u := range m.st.Units {
		if m.filter == "" || strings.Contains(u.Name, m.filter) {
			out = append(out, u)
		}
	}
	return out
}

// keepSelection keeps the selected unit when it is still shown, else
// selects the first one shown; the log pane follows the selection.
func (m *topModel) keepSelection() {
	us := m.visible()
	if !slices.ContainsFunc(us, func(u control.Unit) bool { return u.Name == m.sel }) {
		m.sel = ""
		if len(us) > 0 {
			m.sel = us[0].Name
		}
	}
	m.followSelected()
}

func (m *topModel) move(d int) {
	us := m.visible()
	i := slices.IndexFunc(us, func(u control.Unit) bool { return u.Name == m.sel })
	if i < 0 || len(us) == 0 {
		return
	}
	i = max(0, min(len(us)-1, i+d))
	m.sel = us[i].Name
	m.followSelected()
}

// followSelected points the log pane at the selected unit.
func (m *topModel) followSelected() {
	if m.sel == m.logUnit {
		return
	}
	m.logUnit, m.log = m.sel, nil
	if m.logs != nil {
		m.logs.follow(m.sel)
	}
}

// actionTimeout bounds a key's action; a stop waits for the group to be
// empty, which the unit's stop timeout bounds on hermesd's side.
const actionTimeout = 2 * time.Minute

func (m *topModel) act(verb, unit string) tea.Cmd {
	if unit == "" {
		return nil
	}
	m.message = verb + " " + unit + "…"
	c := m.c
	do := map[string]func(context.Context, string) error{"start": c.Start, "stop": c.Stop, "restart": c.Restart}[verb]
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), actionTimeout)
		defer cancel()
		if err := do(ctx, unit); err != nil {
			return actionMsg{err: fmt.Errorf("%s %s: %w", verb, unit, err)}
		}
		return actionMsg{text: verb + " " + unit + ": done"}
	}
}

// dependents is unit and every unit that requires it, directly or not, in
// status order (which is dependency order).
func dependents(us []control.Unit, unit string) []string {
	set := map[string]bool{unit: true}
	for changed := true; changed; {
		changed = false
		for _, u := range us {
			if set[u.Name] {
				continue
			}
			for _, r := range u.Requires {
				if set[r] {
					set[u.Name], changed = true, true
					break
				}
			}
		}
	}
	out := []string{unit}
	for _, u := range us {
		if set[u.Name] && u.Name != unit {
			out = append(out, u.Name)
		}
	}
	return out
}

func (m *topModel) restartWithDependents(unit string) tea.Cmd {
	if unit == "" {
		return nil
	}
	return m.restartEach("restart "+unit+" and the units that require it", dependents(m.st.Units, unit))
}

func (m *topModel) restartAll() tea.Cmd {
	var names []string
	for _, u := range m.st.Units {
		if u.State != control.StateReleased && !slices.Contains(names, u.Name) {
			names = append(names, u.Name)
		}
	}
	return m.restartEach("restart all", names)
}

func (m *topModel) restartEach(what string, names []string) tea.Cmd {
	m.message = what + "…"
	c := m.c
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), actionTimeout)
		defer cancel()
		for _, n := range names {
			if err := c.Restart(ctx, n); err != nil {
				return actionMsg{err: fmt.Errorf("%s: %s: %w", what, n, err)}
			}
		}
		return actionMsg{text: fmt.Sprintf("%s: %s done", what, strings.Join(names, ", "))}
	}
}

func (m *topModel) reload() tea.Cmd {
	m.message = "reload…"
	c := m.c
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), actionTimeout)
		defer cancel()
		p, err := c.Reload(ctx, false)
		if err != nil {
			return actionMsg{err: fmt.Errorf("reload: %w", err)}
		}
		return actionMsg{text: fmt.Sprintf("reload: start %s, stop %s, restart %s, %d errors", list(p.Start), list(p.Stop), list(p.Restart), len(p.Errors))}
	}
}

// openLog shows the selected unit's log in $PAGER (less +F by default),
// giving it the terminal until it exits.
func (m *topModel) openLog() tea.Cmd {
	i := slices.IndexFunc(m.st.Units, func(u control.Unit) bool { return u.Name == m.sel })
	if i < 0 || m.st.Units[i].Log == "" {
		return nil
	}
	path := m.st.Units[i].Log
	var cmd *exec.Cmd
	if pager := os.Getenv("PAGER"); pager != "" {
		cmd = exec.Command("/bin/sh", "-c", pager+` "$1"`, "pager", path)
	} else {
		cmd = exec.Command("less", "+F", path)
	}
	return tea.ExecProcess(cmd, func(err error) tea.Msg { return pagerDoneMsg{err} })
}

// topStyles are top's styles, made on top's first draw: every other
// command would pay for them at its start.
var topStyles = sync.OnceValue(func() (s struct {
	title, selected, dim lipgloss.Style
	state                map[control.UnitState]lipgloss.Style
}) {
	s.title = lipgloss.NewStyle().Bold(true)
	s.selected = lipgloss.NewStyle().Reverse(true)
	s.dim = lipgloss.NewStyle().Faint(true)
	s.state = map[control.UnitState]lipgloss.Style{
		control.StateRunning:  lipgloss.NewStyle().Foreground(lipgloss.Color("2")),
		control.StateFailed:   lipgloss.NewStyle().Foreground(lipgloss.Color("1")),
		control.StateStarting: lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
		control.StateStopping: lipgloss.NewStyle().Foreground(lipgloss.Color("3")),
	}
	return s
})

func (m *topModel) View() string {
	if m.quitting {
		return ""
	}
	style := topStyles()
	var b strings.Builder
	line := func(s string) {
		b.WriteString(cut(s, m.width))
		b.WriteByte('\n')
	}
	d, s := m.st.Daemon, m.st.Supervisor
	head := fmt.Sprintf("hermesd pid %d %s · supervisor %s %s · %d units", d.PID, d.Role, dash(s.Mode), dash(s.Health.String()), len(m.st.Units))
	if m.filter != "" || m.editing {
		head += " · filter: " + m.filter
		if m.editing {
			head += "▏"
		}
	}
	line(style.title.Render(head))
	if m.lastErr != "" {
		line("hermesd: " + m.lastErr)
	}

	us := m.visible()
	rows := [][]string{{"NAME", "STATE", "READY", "PID", "UPTIME", "RESTARTS", "CPU%", "RSS", "OWNERSHIP"}}
	for _, u := range us {
		cpu := "-"
		if v, ok := m.cpuPct[u.PGID]; ok && u.PGID > 0 {
			cpu = strconv.FormatFloat(v, 'f', 1, 64)
		}
		own := dash(u.Ownership)
		if u.Adopted {
			own += " (adopted)"
		}
		rows = append(rows, []string{u.Name, dash(string(u.State)), ready(u), num(u.PID), uptime(u.Uptime), strconv.Itoa(u.Restarts), cpu, size(u.RSS), own})
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], lipgloss.Width(c))
		}
	}
	proxyLines := m.proxyPane()
	footer := 2 // help line and message
	if m.help {
		footer += 3
	}
	// The units pane takes what it needs, up to half the screen; the log
	// pane what is left after the proxy pane and the footer.
	unitRows := min(len(rows), max(3, m.height/2))
	for i, r := range rows[:unitRows] {
		var cells []string
		for j, c := range r {
			cells = append(cells, c+strings.Repeat(" ", widths[j]-lipgloss.Width(c)))
		}
		text := "  " + strings.Join(cells, "  ")
		switch {
		case i == 0:
			line(style.dim.Render(text))
		case us[i-1].Name == m.sel:
			line(style.selected.Render(cut("> "+strings.Join(cells, "  "), m.width)))
		default:
			if st, ok := style.state[us[i-1].State]; ok {
				cells[1] = st.Render(cells[1])
			}
			line("  " + strings.Join(cells, "  "))
		}
	}
	if len(us) == 0 {
		line("  no units" + map[bool]string{true: " match the filter", false: ""}[m.filter != ""])
	}
	logRows := m.height - unitRows - 2 - len(proxyLines) - footer - 1
	line(style.title.Render(rule("log: "+dash(m.logUnit), m.width)))
	if logRows > 0 {
		from := max(0, len(m.log)-logRows)
		for _, l := range m.log[from:] {
			line(l)
		}
		for i := len(m.log) - from; i < logRows; i++ {
			line("")
		}
	}
	for _, l := range proxyLines {
		line(l)
	}
	keys := "↑↓ · s start · x stop · r restart · d +deps · a all · l reload · / filter · o logs · ? help · q quit"
	line(style.dim.Render(keys))
	if m.help {
		line("r restarts the selected unit; d restarts it, then every unit that requires it (directly or not); a restarts all.")
		line("o opens the log in $PAGER (default less +F); / filters units by name: enter keeps, esc clears.")
		line("Counts refresh on each event; CPU % and RSS at most once a second.")
	}
	b.WriteString(cut(m.message, m.width))
	return b.String()
}

// proxyPane is the proxy's lines: sessions with their breaker, last cuts.
func (m *topModel) proxyPane() []string {
	px := m.st.Proxy
	if px == nil {
		return nil
	}
	out := []string{topStyles().title.Render(rule(fmt.Sprintf("proxy %s · %d sessions", px.Listen, len(px.Breakers)), m.width))}
	for i, br := range px.Breakers {
		if i == 3 {
			out = append(out, fmt.Sprintf("  … %d more sessions", len(px.Breakers)-3))
			break
		}
		state := "closed"
		if br.Tripped {
			state = "OPEN"
		}
		out = append(out, fmt.Sprintf("  %s  %s/%s  streak %d/%d  %s", br.Session, br.Provider, br.Model, br.Streak, br.Threshold, state))
	}
	if len(m.cuts) == 0 {
		return append(out, "  no cuts")
	}
	out = append(out, "  last cuts:")
	for i := len(m.cuts) - 1; i >= 0 && i >= len(m.cuts)-3; i-- {
		e := m.cuts[i]
		out = append(out, fmt.Sprintf("  %s  %s/%s %s after %s, session %s", e.Time.Local().Format("15:04:05"), e.Provider, e.Model, e.Layer, timeoutWords(e.Value), e.Session))
	}
	return out
}

// rule is "── title ───…" across width.
func rule(title string, width int) string {
	s := "── " + title + " "
	if n := width - lipgloss.Width(s); n > 0 {
		s += strings.Repeat("─", n)
	}
	return s
}

// cut shortens s to width display cells.
func cut(s string, width int) string {
	if width <= 0 || lipgloss.Width(s) <= width {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && lipgloss.Width(string(r)) > width {
		r = r[:len(r)-1]
	}
	return string(r)
}

package top

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/explain"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/list"
)

// passMsg is one pass of the fleet from the feed: list's rows, when they were decided, and why
// the pass failed (the rows before it then stay on screen).
type passMsg struct {
	rows []list.Row
	at   time.Time
	err  error
}

// readMsg is what a command printed about an HPA (its key) for one of its screens (its
// timeline, a what-if), or why it could not.
type readMsg struct {
	screen screen
	key    string
	text   string
	err    error
}

// reading is what a command prints about the open HPA, read off the program's loop.
type reading struct {
	// key is the HPA it is of; asked what was asked of it (a what-if's variant).
	key, asked string
	// text is nil while it is read.
	text []string
}

// proposal is a what-if made a patch of the HPA as read now: what applying it would write.
type proposal struct {
	key, variant string
	// resourceVersion is the HPA's as read; patch the JSON merge patch of its spec.
	resourceVersion, patch string
	// apply writes it: a server dry run, then the patch at resourceVersion. It returns the line
	// that says what was written.
	apply func() (string, error)
}

// proposalMsg is a proposal made, or why none could be.
type proposalMsg struct {
	p   *proposal
	key string
	err error
}

// appliedMsg is what applying a proposal wrote, or why nothing was.
type appliedMsg struct {
	key, line string
	err       error
}

// tickMsg is a second passing: HELD UNTIL and the pass's age count down on screen.
type tickMsg time.Time

// screen is what the model shows.
type screen int

const (
	fleetScreen screen = iota
	hpaScreen
	pastScreen
	whatIfScreen
	tuneScreen
	applyScreen
	helpScreen
)

// sessionLength is how many passes of an HPA's replicas the session keeps for its sparkline.
const sessionLength = 60

// sizes are an HPA's replicas at one pass: what it runs and what its decision would set.
type sizes struct{ current, desired int32 }

// model is the screen's state. It changes only in Update, from messages, so tests drive it as
// the program does.
type model struct {
	// scope says what is listed ("namespace shop", "every namespace").
	scope         string
	allNamespaces bool
	period        time.Duration
	// refresh asks the feed for a pass now; nil in tests.
	refresh func()
	// tick is the next second's tick; tests leave it nil, so that the screen's times are the
	// passes' own.
	tick func() tea.Cmd
	// past is the timeline of an HPA as timeline prints it at width; nil when top cannot read
	// one.
	past func(namespace, name string, width int) (string, error)
	// whatIf is simulate's comparison of an HPA and a variant of it (simulate's --variant
	// syntax, KEY=VALUE,...) on its recent load; nil when top cannot play one.
	whatIf func(namespace, name, variant string, width int) (string, error)
	// tune is tune's recommendation for an HPA on its recent load, as tune prints it; nil when
	// top cannot make one.
	tune func(namespace, name string, width int) (string, error)
	// since is how far back past, whatIf and tune go, for the titles.
	since time.Duration
	// propose makes a what-if's variant a patch of the HPA as read now; nil with --read-only,
	// which hides every write.
	propose func(namespace, name, variant string) (*proposal, error)

	width, height int
	now           time.Time

	rows    []list.Row
	at      time.Time
	err     error
	passes  int
	before  map[string][]string
	changed map[string][]bool
	session map[string][]sizes

	sortBy       string
	filter       string
	filtering    bool
	problemsOnly bool
	namespace    string

	// selected is the key (namespace/name) of the row under the cursor, so that it stays
	// selected when a pass reorders the rows.
	selected string
	first    int
	screen   screen
	scroll   int

	pastRead, whatIfRead, tuneRead reading
	// editing says a what-if's variant is being typed, edit holds it.
	editing bool
	edit    string

	// proposed is the patch on the apply screen (nil while it is made), proposeErr why none
	// could be made; outcome is what applying it wrote or why nothing was ("" before y).
	proposed   *proposal
	proposeErr error
	applying   bool
	outcome    string
	// quitting says q or Ctrl-C came while a write was under way: the program ends once the
	// write has, so that what it wrote is known and printed.
	quitting bool
}

func newModel(scope string, allNamespaces bool, period time.Duration, sortBy string, problemsOnly bool, refresh func()) *model {
	return &model{
		scope: scope, allNamespaces: allNamespaces, period: period, refresh: refresh,
		sortBy: sortBy, problemsOnly: problemsOnly,
		width: 80, height: 24,
		changed: map[string][]bool{}, session: map[string][]sizes{},
		tick: everySecond,
	}
}

func (m *model) Init() tea.Cmd { return m.next() }

func everySecond() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

func (m *model) next() tea.Cmd {
	if m.tick == nil {
		return nil
	}
	return m.tick()
}

func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tickMsg:
		// Time on screen only moves forward: a pass may have been taken after this tick.
		if t := time.Time(msg); t.After(m.now) {
			m.now = t
		}
		cmd = m.next()
	case passMsg:
		m.pass(msg)
	case readMsg:
		r := &m.pastRead
		what := "The timeline could not be read: "
		switch msg.screen {
		case whatIfScreen:
			r, what = &m.whatIfRead, "The what-if could not be played: "
		case tuneScreen:
			r, what = &m.tuneRead, "The HPA could not be tuned: "
		}
		if msg.key == r.key {
			r.text = strings.Split(strings.TrimRight(msg.text, "\n"), "\n")
			if msg.err != nil {
				r.text = m.wrapped(what + msg.err.Error())
			}
		}
	case proposalMsg:
		if m.screen == applyScreen && msg.key == m.selected {
			m.proposed, m.proposeErr = msg.p, msg.err
		}
	case appliedMsg:
		m.applying = false
		if m.quitting {
			return m, tea.Quit
		}
		if msg.err != nil {
			m.outcome = "Nothing written: " + msg.err.Error()
		} else {
			m.outcome = msg.line
		}
		// The next pass shows the HPA as patched.
		if m.refresh != nil {
			m.refresh()
		}
	case tea.KeyPressMsg:
		cmd = m.key(msg)
	case tea.PasteMsg:
		pasted := strings.Join(strings.Fields(msg.Content), " ")
		switch {
		case m.filtering:
			m.filter += pasted
		case m.editing:
			m.edit += pasted
		}
	}
	m.normalize()
	return m, cmd
}

// normalize keeps the cursor on a row shown, the window of rows around it and the HPA
// screen's scroll within its text, so that View only draws.
func (m *model) normalize() {
	rows := m.visible()
	cur := m.cursor(rows)
	if m.screen == fleetScreen && cur >= 0 {
		m.selected = list.Key(rows[cur])
	}
	height := m.tableHeight()
	switch {
	case cur < m.first:
		m.first = max(0, cur)
	case cur >= m.first+height:
		m.first = cur - height + 1
	}
	m.first = max(0, min(m.first, len(rows)-height))
	switch m.screen {
	case hpaScreen:
		m.scroll = max(0, min(m.scroll, len(m.hpaBody())-m.bodyHeight()))
	case pastScreen, whatIfScreen, tuneScreen:
		m.scroll = max(0, min(m.scroll, len(m.readBody())-m.bodyHeight()))
	case applyScreen:
		m.scroll = max(0, min(m.scroll, len(m.applyBody())-m.bodyHeight()))
	}
}

// pass takes a new pass of the fleet: what changed since the one before is marked, as list -w
// marks it, and each HPA's replicas join its session.
func (m *model) pass(p passMsg) {
	m.passes++
	m.err = p.err
	if p.err != nil {
		return
	}
	m.at = p.at
	if m.now.Before(p.at) {
		m.now = p.at
	}
	keys := make(map[string][]string, len(p.rows))
	m.changed = make(map[string][]bool, len(p.rows))
	for _, r := range p.rows {
		k := list.Key(r)
		keys[k] = list.ChangeKeys(r)
		marks := make([]bool, len(keys[k]))
		if was, ok := m.before[k]; ok {
			for i := range marks {
				marks[i] = keys[k][i] != was[i]
			}
		} else if m.before != nil {
			marks[1] = true // a new HPA: its NAME
		}
		m.changed[k] = marks
		if d := r.Explanation.Decision; d != nil {
			m.session[k] = append(m.session[k], sizes{d.CurrentReplicas, d.DesiredReplicas})
			m.session[k] = m.session[k][max(0, len(m.session[k])-sessionLength):]
		}
	}
	// The session keeps the HPAs of the latest pass only.
	for k := range m.session {
		if _, ok := keys[k]; !ok {
			delete(m.session, k)
		}
	}
	m.before = keys
	m.rows = p.rows
}

// key answers one keystroke.
func (m *model) key(k tea.KeyPressMsg) tea.Cmd {
	s := k.String()
	if s == "ctrl+c" || (m.applying && s == "q") {
		if m.applying {
			m.quitting = true
			return nil
		}
		return tea.Quit
	}
	if m.editing {
		return m.editKey(k)
	}
	if m.filtering {
		switch s {
		case "enter":
			m.filtering = false
		case "esc":
			m.filtering, m.filter = false, ""
		case "backspace":
			if r := []rune(m.filter); len(r) > 0 {
				m.filter = string(r[:len(r)-1])
			}
		default:
			if k.Text != "" {
				m.filter += k.Text
			}
		}
		m.first = 0
		return nil
	}
	switch m.screen {
	case helpScreen:
		if s == "q" {
			return tea.Quit
		}
		m.screen = fleetScreen
		return nil
	case applyScreen:
		return m.applyKey(s)
	case hpaScreen, pastScreen, whatIfScreen, tuneScreen:
		return m.textKey(s)
	}
	return m.fleetKey(s)
}

func (m *model) fleetKey(s string) tea.Cmd {
	rows := m.visible()
	i := m.cursor(rows)
	switch s {
	case "q":
		return tea.Quit
	case "?":
		m.screen = helpScreen
	case "/":
		m.filtering = true
	case "esc":
		m.filter = ""
	case "up", "k":
		m.moveTo(rows, i-1)
	case "down", "j":
		m.moveTo(rows, i+1)
	case "pgup":
		m.moveTo(rows, i-m.tableHeight())
	case "pgdown", "space":
		m.moveTo(rows, i+m.tableHeight())
	case "home", "g":
		m.moveTo(rows, 0)
	case "end", "G":
		m.moveTo(rows, len(rows)-1)
	case "enter":
		if i >= 0 {
			m.selected = list.Key(rows[i])
			m.screen, m.scroll = hpaScreen, 0
		}
	case "p":
		m.problemsOnly = !m.problemsOnly
	case "s":
		m.sortBy = nextOf(append([]string{""}, m.sortColumns()...), m.sortBy)
	case "n":
		if m.allNamespaces {
			m.namespace = nextOf(append([]string{""}, m.namespaces()...), m.namespace)
		}
	case "r":
		if m.refresh != nil {
			m.refresh()
		}
	}
	return nil
}

// textKey answers a key on the HPA's screens: its decision and its timeline.
func (m *model) textKey(s string) tea.Cmd {
	switch s {
	case "q":
		return tea.Quit
	case "esc", "backspace", "left", "h":
		if m.screen == hpaScreen {
			m.screen = fleetScreen
		} else {
			m.screen, m.scroll = hpaScreen, 0
		}
	case "?":
		m.screen = helpScreen
	case "up", "k":
		m.scroll = max(0, m.scroll-1)
	case "down", "j":
		m.scroll++
	case "pgup":
		m.scroll = max(0, m.scroll-m.bodyHeight())
	case "pgdown", "space":
		m.scroll += m.bodyHeight()
	case "home", "g":
		m.scroll = 0
	case "t":
		m.screen, m.scroll = pastScreen, 0
		return m.readPast()
	case "u":
		m.screen, m.scroll = tuneScreen, 0
		return m.readTune()
	case "w":
		m.editing = true
		if m.whatIfRead.key == m.selected {
			m.edit = m.whatIfRead.asked
		} else {
			m.edit = ""
		}
	case "a":
		if m.screen == whatIfScreen && m.propose != nil && m.whatIfRead.text != nil {
			m.screen, m.scroll = applyScreen, 0
			m.proposed, m.proposeErr, m.outcome = nil, nil, ""
			ns, name, _ := strings.Cut(m.selected, "/")
			propose, key, variant := m.propose, m.selected, m.whatIfRead.asked
			return func() tea.Msg {
				p, err := propose(ns, name, variant)
				return proposalMsg{p: p, key: key, err: err}
			}
		}
	case "r":
		switch m.screen {
		case pastScreen:
			return m.readPast()
		case whatIfScreen:
			return m.playWhatIf(m.whatIfRead.asked)
		case tuneScreen:
			return m.readTune()
		}
		if m.refresh != nil {
			m.refresh()
		}
	}
	return nil
}

// readOff has read print what a command prints about the open HPA off the program's loop
// (the commands read the cluster or Prometheus, and play for a while), into r for screen s;
// read nil says unavailable instead.
func (m *model) readOff(s screen, r *reading, asked, unavailable string, read func(namespace, name string, width int) (string, error)) tea.Cmd {
	*r = reading{key: m.selected, asked: asked}
	if read == nil {
		r.text = []string{unavailable}
		return nil
	}
	ns, name, _ := strings.Cut(m.selected, "/")
	key, width := m.selected, m.width
	return func() tea.Msg {
		text, err := read(ns, name, width)
		return readMsg{screen: s, key: key, text: text, err: err}
	}
}

// readPast reads the open HPA's timeline.
func (m *model) readPast() tea.Cmd {
	return m.readOff(pastScreen, &m.pastRead, "", "top cannot read timelines here.", m.past)
}

// readTune tunes the open HPA.
func (m *model) readTune() tea.Cmd {
	return m.readOff(tuneScreen, &m.tuneRead, "", "top cannot tune here.", m.tune)
}

// playWhatIf plays the open HPA and variant on its recent load.
func (m *model) playWhatIf(variant string) tea.Cmd {
	var play func(namespace, name string, width int) (string, error)
	if whatIf := m.whatIf; whatIf != nil {
		play = func(namespace, name string, width int) (string, error) {
			return whatIf(namespace, name, variant, width)
		}
	}
	return m.readOff(whatIfScreen, &m.whatIfRead, variant, "top cannot play what-ifs here.", play)
}

// applyKey answers a key on the apply screen: y applies the patch once, anything else goes
// back to the what-if without writing.
func (m *model) applyKey(s string) tea.Cmd {
	switch {
	case s == "q" && m.outcome != "":
		return tea.Quit
	case m.applying:
		return nil
	case s == "y" && m.proposed != nil && m.outcome == "":
		m.applying = true
		p := m.proposed
		return func() tea.Msg {
			line, err := p.apply()
			return appliedMsg{key: p.key, line: line, err: err}
		}
	case s == "up" || s == "k":
		m.scroll = max(0, m.scroll-1)
		return nil
	case s == "down" || s == "j":
		m.scroll++
		return nil
	}
	m.screen, m.scroll = whatIfScreen, 0
	return nil
}

// editKey answers a key while a what-if's variant is typed: enter plays it, esc cancels.
func (m *model) editKey(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "enter":
		m.editing = false
		if strings.TrimSpace(m.edit) == "" {
			return nil
		}
		m.screen, m.scroll = whatIfScreen, 0
		return m.playWhatIf(strings.TrimSpace(m.edit))
	case "esc":
		m.editing = false
	case "backspace":
		if r := []rune(m.edit); len(r) > 0 {
			m.edit = string(r[:len(r)-1])
		}
	case "ctrl+c":
		return tea.Quit
	default:
		m.edit += k.Text
	}
	return nil
}

// nextOf is the value after cur in all, wrapping around.
func nextOf(all []string, cur string) string {
	return all[(slices.Index(all, cur)+1)%len(all)]
}

// sortColumns are the columns s cycles through: those on screen.
func (m *model) sortColumns() []string {
	// SortColumns is a copy of its own: deleting from it leaves list's columns alone.
	return slices.DeleteFunc(list.SortColumns(), func(c string) bool { return c == "NAMESPACE" && !m.allNamespaces })
}

// namespaces are those of the rows, in order.
func (m *model) namespaces() []string {
	var out []string
	for _, r := range m.rows {
		if ns := r.Explanation.Metadata.Namespace; !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out
}

// visible are the rows on screen, in their order: the namespace chosen, the problems only,
// those whose cells hold the filter (case-insensitive), sorted.
func (m *model) visible() []list.Row {
	filter := strings.ToLower(m.filter)
	var out []list.Row
	for _, r := range m.rows {
		e := r.Explanation
		switch {
		case m.namespace != "" && e.Metadata.Namespace != m.namespace:
		case m.problemsOnly && len(r.Findings()) == 0:
		case filter != "" && !strings.Contains(strings.ToLower(strings.Join(list.Cells(r, m.now, false), " ")), filter):
		default:
			out = append(out, r)
		}
	}
	if m.sortBy != "" {
		list.SortRows(out, m.sortBy)
	}
	return out
}

// cursor is the index of the selected row in rows: the first row when none is selected or the
// selected one is gone, -1 for no rows.
func (m *model) cursor(rows []list.Row) int {
	if len(rows) == 0 {
		return -1
	}
	return max(0, slices.IndexFunc(rows, func(r list.Row) bool { return list.Key(r) == m.selected }))
}

func (m *model) moveTo(rows []list.Row, i int) {
	if len(rows) == 0 {
		return
	}
	m.selected = list.Key(rows[min(max(i, 0), len(rows)-1)])
}

// headerLines is how many lines the title takes: none on a terminal too low for them and a
// few rows.
func (m *model) headerLines() int {
	if m.height < 6 {
		return 0
	}
	return 2
}

// tableHeight is how many rows fit under the title, the column names and above the footer.
func (m *model) tableHeight() int { return max(1, m.height-m.headerLines()-2) }

// bodyHeight is how many lines of an HPA's text fit between the title and the footer.
func (m *model) bodyHeight() int { return max(1, m.height-2) }

// open is the row the HPA screen shows, nil when it is gone from the fleet.
func (m *model) open() *list.Row {
	i := slices.IndexFunc(m.rows, func(r list.Row) bool { return list.Key(r) == m.selected })
	if i < 0 {
		return nil
	}
	return &m.rows[i]
}

var (
	titleStyle    = lipgloss.NewStyle().Bold(true)
	selectedStyle = lipgloss.NewStyle().Reverse(true)
	errorStyle    = lipgloss.NewStyle().Foreground(lipgloss.Red)
	faintStyle    = lipgloss.NewStyle().Faint(true)
)

func (m *model) View() tea.View {
	var content string
	switch m.screen {
	case helpScreen:
		content = m.helpView()
	case hpaScreen:
		content = m.hpaView()
	case pastScreen, whatIfScreen, tuneScreen:
		content = m.readView()
	case applyScreen:
		content = m.textView("kubectl hpa top · "+m.selected+" · apply what if "+m.whatIfRead.asked, m.applyBody(), m.applyKeys())
	default:
		content = m.fleetView()
	}
	v := tea.NewView(content)
	v.AltScreen = true
	return v
}

// fleetView is the header, the table of the visible rows around the cursor, and the footer.
func (m *model) fleetView() string {
	var lines []string
	if m.headerLines() > 0 {
		lines = append(lines, m.header()...)
	}
	rows := m.visible()
	header := list.Columns(m.allNamespaces, false)
	cells := make([][]string, len(rows))
	for i, r := range rows {
		cells[i] = list.Shown(list.Cells(r, m.now, false), m.allNamespaces, false)
		if marks := m.changed[list.Key(r)]; marks != nil {
			for j, changed := range list.Shown(slices.Clone(marks), m.allNamespaces, false) {
				if changed {
					cells[i][j] += "*"
				}
			}
		}
	}
	widths := make([]int, len(header))
	for j, h := range header {
		widths[j] = len(h)
		for i := range cells {
			widths[j] = max(widths[j], lipgloss.Width(cells[i][j]))
		}
	}
	keep := fitColumns(header, widths, m.width-2)
	header, widths = pick(header, keep), pick(widths, keep)
	for i := range cells {
		cells[i] = pick(cells[i], keep)
	}
	lines = append(lines, fit("  "+joinCells(header, widths), m.width))
	cur := m.cursor(rows)
	height := m.tableHeight()
	// normalize put the cursor inside the window; the bounds are checked again all the same.
	first := max(0, min(m.first, len(rows)-height))
	for i := first; i < len(rows) && i < first+height; i++ {
		line := fit("  "+joinCells(cells[i], widths), m.width)
		if i == cur {
			line = selectedStyle.Render(fit("> "+joinCells(cells[i], widths), m.width))
		} else if f := rows[i].Findings(); len(f) > 0 && f[0].Severity == v1alpha1.SeverityError {
			line = errorStyle.Render(line)
		}
		lines = append(lines, line)
	}
	if len(rows) == 0 {
		lines = append(lines, fit("  "+m.nothingShown(), m.width))
	}
	for len(lines) < m.height-1 {
		lines = append(lines, "")
	}
	lines = append(lines, m.footer())
	return strings.Join(lines[:min(len(lines), max(m.height, 1))], "\n")
}

// header is the title with what is listed and the problems by kind, and who writes the HPAs'
// status with when the figures were decided.
func (m *model) header() []string {
	problems, withProblems := map[string]int{}, 0
	writers := map[string]int{}
	for _, r := range m.rows {
		if fs := r.Findings(); len(fs) > 0 {
			withProblems++
			for _, f := range fs {
				problems[f.ID]++
			}
		}
		w := "nobody"
		if c := r.Explanation.Cluster; c != nil && len(c.StatusWriters) > 0 {
			w = c.StatusWriters[0].Manager
		}
		writers[w]++
	}
	title := fmt.Sprintf("kubectl hpa top · %s · %s · %d with problems", m.scope, plural(len(m.rows), "HPA", "HPAs"), withProblems)
	if len(problems) > 0 {
		title += ": " + counts(problems)
	}
	var second string
	switch {
	case m.passes == 0:
		second = "reading the fleet..."
	case m.at.IsZero():
		second = "no pass has succeeded yet"
	default:
		second = fmt.Sprintf("decided %s (%s ago, every %s) · status by %s", m.at.UTC().Format("15:04:05"), m.now.Sub(m.at).Round(time.Second), m.period, counts(writers))
	}
	lines := []string{titleStyle.Render(fit(title, m.width)), fit(second, m.width)}
	if m.err != nil {
		lines[1] = errorStyle.Render(fit("the last pass failed: "+m.err.Error(), m.width))
	}
	return lines
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// counts are "a 3, b 1": the most first, then by name.
func counts(by map[string]int) string {
	keys := make([]string, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(by[b], by[a]), cmp.Compare(a, b)) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, by[k])
	}
	return strings.Join(parts, ", ")
}

func (m *model) nothingShown() string {
	switch {
	case m.passes == 0:
		return "reading the fleet..."
	case len(m.rows) == 0:
		return "No HPA found."
	}
	return "No HPA matches: esc clears the filter, p shows them all, n the next namespace."
}

// footer is the filter being typed, or what is shown and the keys.
func (m *model) footer() string {
	if m.filtering {
		return fit("/"+m.filter+"█  (enter keeps it, esc clears it)", m.width)
	}
	var shown []string
	if m.filter != "" {
		shown = append(shown, "filter "+m.filter)
	}
	if m.namespace != "" {
		shown = append(shown, "namespace "+m.namespace)
	}
	if m.problemsOnly {
		shown = append(shown, "problems only")
	}
	sort := "namespace, name"
	if m.sortBy != "" {
		sort = strings.ToLower(m.sortBy)
	}
	shown = append(shown, "sorted by "+sort)
	return faintStyle.Render(fit(strings.Join(shown, " · ")+" · ? keys · enter open · / filter · s sort · p problems · q quit", m.width))
}

// hpaBody is the text of the HPA screen: its replicas this session, then explain's text of
// its latest decision; nil when the HPA is gone from the fleet.
func (m *model) hpaBody() []string {
	r := m.open()
	if r == nil {
		return []string{m.selected + " is gone from the fleet (deleted, or no longer selected): esc goes back."}
	}
	var body bytes.Buffer
	if s := m.session[list.Key(*r)]; len(s) > 0 {
		lo, hi := int32(0), int32(1)
		if rg := r.Explanation.Replicas; rg != nil {
			lo, hi = rg.Min, rg.Max
		}
		fmt.Fprintf(&body, "This session (%s, every %s; %d to %d replicas):\n", plural(len(s), "pass", "passes"), m.period, lo, hi)
		fmt.Fprintf(&body, "  current  %s  now %d\n", sparkline(s, lo, hi, func(x sizes) int32 { return x.current }), s[len(s)-1].current)
		fmt.Fprintf(&body, "  would be %s  now %d\n\n", sparkline(s, lo, hi, func(x sizes) int32 { return x.desired }), s[len(s)-1].desired)
	}
	if err := explain.RenderText(&body, r.Explanation); err != nil {
		fmt.Fprintf(&body, "rendering: %v\n", err)
	}
	return strings.Split(strings.TrimRight(body.String(), "\n"), "\n")
}

// hpaView is the HPA under the cursor as explain shows it, under its replicas this session.
func (m *model) hpaView() string {
	title := "kubectl hpa top · " + m.selected
	if r := m.open(); r != nil {
		title += " · decided " + r.Explanation.Time.UTC().Format("15:04:05")
	}
	return m.textView(title, m.hpaBody(), "t timeline · w what if · u tune · esc back")
}

// readBody is the text of the timeline's, the what-if's or the tuning's screen, or that it is
// being read.
func (m *model) readBody() []string {
	if m.screen == tuneScreen {
		if m.tuneRead.text == nil {
			return []string{"Tuning " + m.selected + " on the last " + shortDuration(m.since) + " of load (kubectl hpa tune)..."}
		}
		return m.tuneRead.text
	}
	if m.screen == whatIfScreen {
		if m.whatIfRead.text == nil {
			return []string{"Playing the last " + shortDuration(m.since) + " of load for " + m.selected + " as it is and with " + m.whatIfRead.asked + " (kubectl hpa simulate)..."}
		}
		return m.whatIfRead.text
	}
	if m.pastRead.text == nil {
		return []string{"Reading the timeline (kubectl hpa timeline " + m.selected + ")..."}
	}
	return m.pastRead.text
}

// readView is the open HPA's timeline as kubectl hpa timeline prints it, a what-if as kubectl
// hpa simulate prints it, or its tuning as kubectl hpa tune prints it.
func (m *model) readView() string {
	if m.screen == tuneScreen {
		title := fmt.Sprintf("kubectl hpa top · %s · tune, on the last %s", m.selected, shortDuration(m.since))
		return m.textView(title, m.readBody(), "r tune again · esc back")
	}
	if m.screen == whatIfScreen {
		title := fmt.Sprintf("kubectl hpa top · %s · what if %s, on the last %s", m.selected, m.whatIfRead.asked, shortDuration(m.since))
		keys := "w edit · r play again · esc back"
		if m.propose != nil {
			keys = "a apply · " + keys
		}
		return m.textView(title, m.readBody(), keys)
	}
	title := fmt.Sprintf("kubectl hpa top · %s · timeline, the last %s", m.selected, shortDuration(m.since))
	return m.textView(title, m.readBody(), "r read again · esc back")
}

// applyBody is the patch a what-if makes, what writing it does, and once y is pressed what
// was written.
func (m *model) applyBody() []string {
	switch {
	case m.proposeErr != nil:
		return m.wrapped("No patch: " + m.proposeErr.Error())
	case m.proposed == nil:
		return []string{"Reading " + m.selected + " to make the patch..."}
	}
	p := m.proposed
	lines := []string{
		fmt.Sprintf("Patch of %s's spec (JSON merge patch), from %s:", m.selected, p.variant),
		"",
	}
	lines = append(lines, strings.Split(p.patch, "\n")...)
	lines = append(lines, "",
		fmt.Sprintf("y sends it as a server dry run, then for real, both at resourceVersion %s (as read now),", p.resourceVersion),
		"as field manager kubectl-hpa: the API server refuses it if anyone changed the HPA's spec since.",
		"Any other key goes back without writing.")
	switch {
	case m.applying:
		lines = append(lines, "", "Writing...")
	case m.outcome != "":
		lines = append(append(lines, ""), m.wrapped(m.outcome)...)
	}
	return lines
}

// wrapped is s in lines of the screen's width: a sentence about a write is read whole.
func (m *model) wrapped(s string) []string {
	return strings.Split(ansi.Wrap(s, max(m.width, 20), " "), "\n")
}

func (m *model) applyKeys() string {
	if m.outcome != "" {
		return "any key back · q quit"
	}
	return "y apply · any other key back"
}

// shortDuration is d without its zero units: 1h, 30m, 1h30m.
func shortDuration(d time.Duration) string {
	s := d.String()
	s = strings.Replace(s, "m0s", "m", 1)
	return strings.Replace(s, "h0m", "h", 1)
}

// textView is a title, the lines of body from the scroll, and a footer with keys.
func (m *model) textView(title string, all []string, keys string) string {
	height := m.bodyHeight()
	scroll := max(0, min(m.scroll, len(all)-height))
	lines := []string{titleStyle.Render(fit(title, m.width))}
	for _, l := range all[scroll:min(len(all), scroll+height)] {
		lines = append(lines, fit(l, m.width))
	}
	for len(lines) < m.height-1 {
		lines = append(lines, "")
	}
	footer := faintStyle.Render(fit(fmt.Sprintf("lines %d-%d of %d · %s · ? keys · q quit", scroll+1, min(len(all), scroll+height), len(all), keys), m.width))
	if m.editing {
		footer = fit("what if: "+m.edit+"█  (simulate's --variant, e.g. cpu=60%,max=20; enter plays it, esc cancels)", m.width)
	}
	lines = append(lines, footer)
	return strings.Join(lines[max(0, len(lines)-max(m.height, 1)):], "\n")
}

// sparkline draws one value of each pass between lo and hi.
func sparkline(s []sizes, lo, hi int32, value func(sizes) int32) string {
	const bars = "▁▂▃▄▅▆▇█"
	levels := []rune(bars)
	out := make([]rune, len(s))
	for i, x := range s {
		v := min(max(value(x), lo), hi)
		l := 0
		if hi > lo {
			l = int(int64(v-lo) * int64(len(levels)-1) / int64(hi-lo))
		}
		out[i] = levels[l]
	}
	return string(out)
}

const helpText = `kubectl hpa top: keys

  The fleet
    ↑ ↓ j k       move            pgup pgdown    a page
    g G           first, last     enter          open the HPA: explain's view
    /             filter as you type (enter keeps it, esc clears it)
    s             sort by the next column        p   problems only
    n             next namespace (with -A)       r   decide again now
    ?             these keys      q ctrl+c       quit

  One HPA
    ↑ ↓ pgup pgdown   scroll      esc            back
    t             its timeline (kubectl hpa timeline over --since)
    w             what if: type a change (simulate's --variant, cpu=60%,max=20)
                  and enter plays the last --since of load for the HPA as it is
                  and as changed (kubectl hpa simulate --from-prometheus)
    u             tune it: kubectl hpa tune --from-prometheus over --since, its
                  recommendation, Pareto front and patch
    a             on a what-if: its patch, y writes it (a server dry run first;
                  refused if the HPA's spec changed); not with --read-only
    r             decide again now (on the timeline: read it again)

  A * marks a value that changed at the latest pass, as list -w marks it; every
  figure is list's (explain's for one HPA), decided again every sync period and
  as soon as an HPA's spec changes.

  any key goes back`

func (m *model) helpView() string {
	lines := strings.Split(helpText, "\n")
	for i := range lines {
		lines[i] = fit(lines[i], m.width)
	}
	return strings.Join(lines[:min(len(lines), max(m.height, 1))], "\n")
}

// dropOrder is the order in which columns leave a table too wide for the terminal: what
// explains a row least first, so that the decision, its problems and what binds it stay.
var dropOrder = []string{"HISTORY", "TARGET", "CONTROLLER", "MIN/MAX", "METRIC", "HELD UNTIL", "NAMESPACE", "BINDING", "PROBLEMS"}

// fitColumns says which columns to keep so that the table fits width cells, dropping them in
// dropOrder as needed.
func fitColumns(header []string, widths []int, width int) []bool {
	keep := make([]bool, len(header))
	total := -3
	for j := range header {
		keep[j] = true
		total += widths[j] + 3
	}
	for _, c := range dropOrder {
		if total <= width {
			break
		}
		if j := slices.Index(header, c); j >= 0 {
			keep[j] = false
			total -= widths[j] + 3
		}
	}
	return keep
}

func pick[T any](all []T, keep []bool) []T {
	var out []T
	for j, v := range all {
		if keep[j] {
			out = append(out, v)
		}
	}
	return out
}

// joinCells pads each cell to its column's width, three spaces apart as kubectl's tables.
func joinCells(cells []string, widths []int) string {
	var b strings.Builder
	for j, c := range cells {
		if j > 0 {
			b.WriteString("   ")
		}
		b.WriteString(c)
		if j < len(cells)-1 {
			b.WriteString(strings.Repeat(" ", max(0, widths[j]-lipgloss.Width(c))))
		}
	}
	return b.String()
}

// fit cuts s to width cells (its end replaced by …), and pads it so that a selected line is
// reversed to the edge.
func fit(s string, width int) string {
	if width <= 0 {
		return ""
	}
	if ansi.StringWidth(s) > width {
		s = ansi.Truncate(s, width, "…")
	}
	return s + strings.Repeat(" ", max(0, width-ansi.StringWidth(s)))
}

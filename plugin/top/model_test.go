package top

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/list"
)

var t0 = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

type rowOpt func(*list.Row)

// row is an HPA's row as list decides it: on Deployment name, 1 to 10 replicas, cpu at 80 %
// of a 60 % target, its status written by kube-controller-manager 10s before.
func row(ns, name string, current, desired int32, opts ...rowOpt) list.Row {
	e := &v1alpha1.Explanation{
		Metadata: v1alpha1.Metadata{Namespace: ns, Name: name},
		Time:     metav1.NewTime(t0),
		Target:   &v1alpha1.Target{APIVersion: "apps/v1", Kind: "Deployment", Name: name, SpecReplicas: ptr.To(current), StatusReplicas: ptr.To(current), Selector: "app=" + name},
		Replicas: &v1alpha1.Range{Min: 1, Max: 10},
		Metrics:  []v1alpha1.Metric{{Type: "Resource", Name: "cpu", Short: "cpu", Current: "80%", Target: "60%", Chosen: true}},
		Decision: &v1alpha1.Decision{CurrentReplicas: current, DesiredReplicas: desired},
		Verdict:  &v1alpha1.Verdict{Sentence: fmt.Sprintf("%d replicas now, %d at this sync.", current, desired), Constraint: "None"},
		History:  &v1alpha1.History{Source: "status"},
		Cluster:  &v1alpha1.Cluster{StatusWriters: []v1alpha1.StatusWriter{{Manager: "kube-controller-manager", Time: ptr.To(metav1.NewTime(t0.Add(-10 * time.Second)))}}},
	}
	r := list.Row{Explanation: e, Binding: "None"}
	for _, o := range opts {
		o(&r)
	}
	return r
}

func finding(id string, severity v1alpha1.Severity) rowOpt {
	return func(r *list.Row) {
		r.Explanation.Findings = append(r.Explanation.Findings, v1alpha1.Finding{ID: id, Severity: severity, Message: id + " says why"})
	}
}

// held is a decision a scale-down window holds for d after t0.
func held(d time.Duration) rowOpt {
	return func(r *list.Row) {
		r.Binding = "ScaleDownStabilization"
		r.Explanation.Verdict.Constraint = r.Binding
		r.Explanation.Verdict.HeldUntil = ptr.To(metav1.NewTime(t0.Add(d)))
	}
}

func writtenBy(manager string) rowOpt {
	return func(r *list.Row) {
		r.Explanation.Cluster.StatusWriters[0].Manager = manager
	}
}

// fleet is five HPAs in two namespaces: one held by its window, one blind, one capped.
func fleet() []list.Row {
	return []list.Row{
		row("payments", "api", 4, 6),
		row("payments", "worker", 3, 3, held(2*time.Minute)),
		row("shop", "cart", 2, 2, finding(v1alpha1.FindingBlind, v1alpha1.SeverityError)),
		row("shop", "search", 10, 10, finding("CappedAtMax", v1alpha1.SeverityWarning), writtenBy("kubectl-hpa")),
		row("shop", "web", 5, 4),
	}
}

// program runs m in a Bubble Tea program of width x height on no terminal, as the library's
// own tests do; done receives the model it ends with.
func program(t *testing.T, m *model, width, height int) (p *tea.Program, done <-chan *model) {
	t.Helper()
	m.tick = nil
	p = tea.NewProgram(m, tea.WithInput(&bytes.Buffer{}), tea.WithOutput(io.Discard), tea.WithWindowSize(width, height), tea.WithoutSignals())
	out := make(chan *model, 1)
	go func() {
		final, err := p.Run()
		if err != nil {
			t.Errorf("program: %v", err)
		}
		out <- final.(*model)
	}()
	return p, out
}

// drive sends msgs in order to m in a program of width x height, quits and returns the model
// as the program left it.
func drive(t *testing.T, m *model, width, height int, msgs ...tea.Msg) *model {
	t.Helper()
	p, done := program(t, m, width, height)
	// The program's own size message may come after the test's: both say the same.
	p.Send(tea.WindowSizeMsg{Width: width, Height: height})
	for _, msg := range msgs {
		p.Send(msg)
	}
	p.Quit()
	return wait(t, done)
}

func wait(t *testing.T, done <-chan *model) *model {
	t.Helper()
	select {
	case m := <-done:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("the program did not end within 10s")
	}
	return nil
}

// frame is the screen as text: no colours, no spaces padding a line.
func frame(m *model) string {
	lines := strings.Split(ansi.Strip(m.View().Content), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

func every(rows []list.Row) *model {
	return newModel("every namespace", true, 15*time.Second, "", false, nil)
}

func key(s string) tea.Msg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

// typed are the keystrokes of s, one rune each.
func typed(s string) []tea.Msg {
	var out []tea.Msg
	for _, r := range s {
		out = append(out, key(string(r)))
	}
	return out
}

func TestFleetFrameGoldens(t *testing.T) {
	for _, size := range []struct{ w, h int }{{80, 24}, {200, 50}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			m := drive(t, every(nil), size.w, size.h, passMsg{rows: fleet(), at: t0})
			cmdtest.CheckGolden(t, fmt.Sprintf("fleet-%dx%d", size.w, size.h), frame(m))
		})
	}
}

func TestHPAScreenIsExplainsViewUnderTheSession(t *testing.T) {
	second := fleet()
	second[0] = row("payments", "api", 6, 7)
	m := drive(t, every(nil), 80, 24, passMsg{rows: fleet(), at: t0}, passMsg{rows: second, at: t0.Add(15 * time.Second)}, key("enter"))
	cmdtest.CheckGolden(t, "hpa-80x24", frame(m))
}

func TestKeys(t *testing.T) {
	names := func(m *model) []string {
		var out []string
		for _, r := range m.visible() {
			out = append(out, list.Key(r))
		}
		return out
	}
	cases := []struct {
		name string
		keys []tea.Msg
		want []string
	}{
		{name: "the filter keeps the rows whose cells hold what is typed", keys: typed("/pay"), want: []string{"payments/api", "payments/worker"}},
		{name: "the filter is case-insensitive and matches any cell", keys: typed("/kubectl-HPA"), want: []string{"shop/search"}},
		{name: "backspace takes back a character of the filter", keys: append(typed("/carx"), key("backspace")), want: []string{"shop/cart"}},
		{name: "esc while typing clears the filter", keys: append(typed("/cart"), key("esc")), want: []string{"payments/api", "payments/worker", "shop/cart", "shop/search", "shop/web"}},
		{name: "enter keeps the filter, esc after it clears it", keys: append(append(typed("/web"), key("enter")), key("esc")), want: []string{"payments/api", "payments/worker", "shop/cart", "shop/search", "shop/web"}},
		{name: "p shows the HPAs with a problem only, worst first as list sorts them", keys: []tea.Msg{key("p")}, want: []string{"shop/cart", "shop/search"}},
		{name: "n shows the next namespace", keys: []tea.Msg{key("n"), key("n")}, want: []string{"shop/cart", "shop/search", "shop/web"}},
		{name: "n past the last namespace shows them all again", keys: []tea.Msg{key("n"), key("n"), key("n")}, want: []string{"payments/api", "payments/worker", "shop/cart", "shop/search", "shop/web"}},
		{name: "s sorts by NAMESPACE first, then by NAME", keys: []tea.Msg{key("s"), key("s")}, want: []string{"payments/api", "shop/cart", "shop/search", "shop/web", "payments/worker"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := drive(t, every(nil), 200, 50, append([]tea.Msg{passMsg{rows: fleet(), at: t0}}, tc.keys...)...)
			if got := names(m); strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("rows %v, want %v\n%s", got, tc.want, frame(m))
			}
		})
	}
}

func TestSortByProblemsPutsTheWorstFirst(t *testing.T) {
	m := newModel("every namespace", true, 15*time.Second, "PROBLEMS", false, nil)
	m = drive(t, m, 200, 50, passMsg{rows: fleet(), at: t0})
	if got := list.Key(m.visible()[0]); got != "shop/cart" {
		t.Errorf("first row %s, want shop/cart (an error finding)\n%s", got, frame(m))
	}
}

func TestAPassMarksWhatChangedAsListWatchDoes(t *testing.T) {
	second := fleet()
	second[4] = row("shop", "web", 5, 3)
	second = append(second, row("shop", "new", 1, 1))
	m := drive(t, every(nil), 200, 50, passMsg{rows: fleet(), at: t0}, passMsg{rows: second, at: t0.Add(15 * time.Second)})
	f := frame(m)
	for _, want := range []string{"shop        new*"} {
		if !strings.Contains(f, want) {
			t.Errorf("frame lacks %q:\n%s", want, f)
		}
	}
	if !strings.Contains(lineOf(f, "shop        web"), "3*") {
		t.Errorf("web's WOULD BE not marked:\n%s", f)
	}
	if strings.Contains(lineOf(f, "payments    api"), "*") {
		t.Errorf("api marked though nothing of it changed:\n%s", f)
	}
}

func lineOf(frame, prefix string) string {
	for _, l := range strings.Split(frame, "\n") {
		if strings.HasPrefix(strings.TrimLeft(l, "> "), prefix) {
			return l
		}
	}
	return ""
}

func TestHeldUntilCountsDownBetweenPasses(t *testing.T) {
	m := drive(t, every(nil), 200, 50, passMsg{rows: fleet(), at: t0}, tickMsg(t0.Add(30*time.Second)))
	if l := lineOf(frame(m), "payments    worker"); !strings.Contains(l, "in 90s") {
		t.Errorf("worker's HELD UNTIL after 30s, want in 90s: %q", l)
	}
	m = drive(t, every(nil), 200, 50, passMsg{rows: fleet(), at: t0}, tickMsg(t0.Add(3*time.Minute)))
	if l := lineOf(frame(m), "payments    worker"); !strings.Contains(l, " now ") {
		t.Errorf("worker's HELD UNTIL once past, want now: %q", l)
	}
}

func TestTheCursorStaysOnItsHPAWhenAPassReordersTheRows(t *testing.T) {
	second := append([]list.Row{row("a", "first", 1, 1)}, fleet()...)
	m := drive(t, every(nil), 200, 50, passMsg{rows: fleet(), at: t0}, key("down"), key("down"), passMsg{rows: second, at: t0.Add(15 * time.Second)})
	if got := list.Key(m.visible()[m.cursor(m.visible())]); got != "shop/cart" {
		t.Errorf("cursor on %s, want shop/cart", got)
	}
}

func TestAFailedPassKeepsTheRowsAndSaysWhy(t *testing.T) {
	m := drive(t, every(nil), 200, 50, passMsg{rows: fleet(), at: t0}, passMsg{err: fmt.Errorf("listing HPAs: connection refused")})
	f := frame(m)
	if !strings.Contains(f, "the last pass failed: listing HPAs: connection refused") || len(m.visible()) != 5 {
		t.Errorf("want the failure in the header and the 5 rows kept:\n%s", f)
	}
}

func TestQuitKeysEndTheProgram(t *testing.T) {
	for _, k := range []string{"q", "ctrl+c"} {
		t.Run(k, func(t *testing.T) {
			p, done := program(t, every(nil), 80, 24)
			p.Send(key(k))
			wait(t, done)
		})
	}
}

func TestHelpAndBack(t *testing.T) {
	m := drive(t, every(nil), 80, 24, passMsg{rows: fleet(), at: t0}, key("?"))
	if !strings.Contains(frame(m), "kubectl hpa top: keys") {
		t.Errorf("? did not show the keys:\n%s", frame(m))
	}
	m = drive(t, every(nil), 80, 24, passMsg{rows: fleet(), at: t0}, key("?"), key("x"))
	if m.screen != fleetScreen {
		t.Errorf("a key after ? did not go back to the fleet")
	}
}

func TestSortingWithoutNamespacesLeavesListsColumnsAlone(t *testing.T) {
	before := strings.Join(list.Columns(false, true), "|")
	m := newModel("namespace shop", false, 15*time.Second, "", false, nil)
	m = drive(t, m, 200, 50, passMsg{rows: fleet(), at: t0}, key("s"), key("s"), key("s"))
	if after := strings.Join(list.Columns(false, true), "|"); after != before {
		t.Errorf("list's columns after s: %s, want %s", after, before)
	}
	if m.sortBy != "MIN/MAX" {
		t.Errorf("after s three times without -A, sorted by %q, want MIN/MAX (NAME, TARGET, MIN/MAX: NAMESPACE is not on screen)", m.sortBy)
	}
}

func TestPTwiceShowsEveryHPAAgain(t *testing.T) {
	m := drive(t, every(nil), 200, 50, passMsg{rows: fleet(), at: t0}, key("p"), key("p"))
	if n := len(m.visible()); n != 5 {
		t.Errorf("after p twice %d rows, want 5", n)
	}
}

func TestPastedTextJoinsTheFilter(t *testing.T) {
	m := drive(t, every(nil), 200, 50, passMsg{rows: fleet(), at: t0}, key("/"), tea.PasteMsg{Content: "sea\n"})
	if m.filter != "sea" || len(m.visible()) != 1 {
		t.Errorf("filter %q with %d rows after pasting sea, want sea and 1 row", m.filter, len(m.visible()))
	}
}

func TestSmallTerminalsStillShowTheCursorsRowAndNoMoreLinesThanTheyHave(t *testing.T) {
	for _, size := range []struct{ w, h int }{{40, 3}, {10, 5}, {1, 1}, {80, 6}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			m := drive(t, every(nil), size.w, size.h, passMsg{rows: fleet(), at: t0}, key("j"), key("j"))
			f := strings.TrimSuffix(frame(m), "\n")
			lines := strings.Split(f, "\n")
			if len(lines) > size.h {
				t.Errorf("%d lines on a terminal %d high:\n%s", len(lines), size.h, f)
			}
			for _, l := range lines {
				if w := ansi.StringWidth(l); w > size.w {
					t.Errorf("line %q is %d wide on a terminal %d wide", l, w, size.w)
				}
			}
			if size.h >= 3 && !strings.Contains(f, ">") {
				t.Errorf("the cursor's row is not on screen:\n%s", f)
			}
			m = drive(t, every(nil), size.w, size.h, passMsg{rows: fleet(), at: t0}, key("enter"), key(" "))
			if n := len(strings.Split(strings.TrimSuffix(frame(m), "\n"), "\n")); n > size.h {
				t.Errorf("the HPA screen has %d lines on a terminal %d high", n, size.h)
			}
		})
	}
}

func TestFitCutsAndPadsToTheCellsOfTheTerminal(t *testing.T) {
	cases := []struct {
		s     string
		width int
		want  string
	}{
		{"abc", 5, "abc  "},
		{"abcdef", 4, "abc…"},
		{"日本語", 4, "日… "},
		{"abc", 0, ""},
	}
	for _, tc := range cases {
		if got := fit(tc.s, tc.width); got != tc.want {
			t.Errorf("fit(%q, %d) = %q, want %q", tc.s, tc.width, got, tc.want)
		}
	}
}

func TestTheHPAScreenSaysWhenItsHPAIsGone(t *testing.T) {
	m := drive(t, every(nil), 80, 24, passMsg{rows: fleet(), at: t0}, key("enter"), passMsg{rows: fleet()[1:], at: t0.Add(15 * time.Second)})
	if f := frame(m); !strings.Contains(f, "payments/api is gone from the fleet") {
		t.Errorf("the HPA screen of a deleted HPA:\n%s", f)
	}
	m = drive(t, every(nil), 80, 24, passMsg{rows: fleet(), at: t0}, key("enter"), passMsg{rows: fleet()[1:], at: t0.Add(15 * time.Second)}, key("esc"))
	if got := list.Key(m.visible()[m.cursor(m.visible())]); got != "payments/worker" || m.selected != got {
		t.Errorf("back on the fleet the cursor is on %s (selected %q), want the first row, payments/worker", got, m.selected)
	}
}

// update sends msg to m as the program does, and runs the command it returns (a read off the
// loop) to its message, which it sends too.
func update(m *model, msg tea.Msg) {
	_, cmd := m.Update(msg)
	if cmd != nil {
		if next := cmd(); next != nil {
			if _, ok := next.(tickMsg); !ok {
				update(m, next)
			}
		}
	}
}

func TestTShowsTheOpenHPAsTimelineAndEscGoesBackToIt(t *testing.T) {
	m := every(nil)
	m.tick, m.since = nil, time.Hour
	var asked []string
	m.past = func(ns, name string, width int) (string, error) {
		asked = append(asked, fmt.Sprintf("%s/%s at %d", ns, name, width))
		return "HPA " + ns + "/" + name + "\nRescales: 2 -> 3 at 11:58:00\n", nil
	}
	for _, msg := range []tea.Msg{tea.WindowSizeMsg{Width: 80, Height: 24}, passMsg{rows: fleet(), at: t0}, key("j"), key("enter"), key("t")} {
		update(m, msg)
	}
	if got := strings.Join(asked, ","); got != "payments/worker at 80" {
		t.Errorf("timeline asked for %q, want payments/worker at 80", got)
	}
	f := frame(m)
	for _, want := range []string{"kubectl hpa top · payments/worker · timeline, the last 1h", "Rescales: 2 -> 3 at 11:58:00", "r read again · esc back"} {
		if !strings.Contains(f, want) {
			t.Errorf("timeline screen lacks %q:\n%s", want, f)
		}
	}
	update(m, key("esc"))
	if m.screen != hpaScreen || !strings.Contains(frame(m), "kubectl hpa top · payments/worker · decided") {
		t.Errorf("esc on the timeline did not go back to the HPA's screen:\n%s", frame(m))
	}
}

func TestATimelineThatFailsSaysWhyAndALateOneForAnotherHPAIsIgnored(t *testing.T) {
	m := every(nil)
	m.tick = nil
	m.past = func(string, string, int) (string, error) { return "", fmt.Errorf("no events of payments/api are left") }
	for _, msg := range []tea.Msg{passMsg{rows: fleet(), at: t0}, key("enter"), key("t")} {
		update(m, msg)
	}
	if f := frame(m); !strings.Contains(f, "The timeline could not be read: no events of payments/api are left") {
		t.Errorf("a failed timeline:\n%s", f)
	}
	update(m, readMsg{screen: pastScreen, key: "shop/web", text: "web's timeline"})
	if strings.Contains(frame(m), "web's timeline") {
		t.Errorf("the timeline of another HPA replaced the open one's:\n%s", frame(m))
	}
}

func TestWPlaysTheTypedVariantThroughSimulateAndShowsWhatItPrints(t *testing.T) {
	m := every(nil)
	m.tick, m.since = nil, time.Hour
	var asked []string
	m.whatIf = func(ns, name, variant string, width int) (string, error) {
		asked = append(asked, fmt.Sprintf("%s/%s %s at %d", ns, name, variant, width))
		return "VARIANT   PEAK\nbase      6\nedited    4\n", nil
	}
	msgs := []tea.Msg{tea.WindowSizeMsg{Width: 100, Height: 24}, passMsg{rows: fleet(), at: t0}, key("enter"), key("w")}
	msgs = append(msgs, typed("cpu=70%,max=4")...)
	for _, msg := range msgs {
		update(m, msg)
	}
	if f := frame(m); !strings.Contains(f, "what if: cpu=70%,max=4█") {
		t.Errorf("the variant being typed is not shown:\n%s", f)
	}
	update(m, key("enter"))
	if got := strings.Join(asked, ","); got != "payments/api cpu=70%,max=4 at 100" {
		t.Errorf("simulate asked for %q", got)
	}
	f := frame(m)
	for _, want := range []string{"what if cpu=70%,max=4, on the last 1h", "edited    4", "w edit · r play again · esc back"} {
		if !strings.Contains(f, want) {
			t.Errorf("the what-if screen lacks %q:\n%s", want, f)
		}
	}
	// w again edits what was played; esc cancels the edit and keeps the screen.
	update(m, key("w"))
	if m.edit != "cpu=70%,max=4" {
		t.Errorf("w on the what-if edits %q, want the variant played", m.edit)
	}
	update(m, key("esc"))
	update(m, key("esc"))
	if m.screen != hpaScreen || m.editing {
		t.Errorf("esc, esc: screen %v editing %v, want the HPA's screen", m.screen, m.editing)
	}
}

func TestAnEmptyWhatIfPlaysNothing(t *testing.T) {
	m := every(nil)
	m.tick = nil
	m.whatIf = func(string, string, string, int) (string, error) {
		t.Error("simulate called for an empty variant")
		return "", nil
	}
	for _, msg := range []tea.Msg{passMsg{rows: fleet(), at: t0}, key("enter"), key("w"), key("enter")} {
		update(m, msg)
	}
	if m.screen != hpaScreen {
		t.Errorf("an empty what-if left the HPA's screen for %v", m.screen)
	}
}

// whatIfOn is m on payments/api's what-if of cpu=70%, with simulate faked.
func whatIfOn(m *model) {
	m.tick = nil
	m.whatIf = func(string, string, string, int) (string, error) { return "VARIANT   PEAK\nedited    4\n", nil }
	for _, msg := range append(append([]tea.Msg{tea.WindowSizeMsg{Width: 120, Height: 30}, passMsg{rows: fleet(), at: t0}, key("enter"), key("w")}, typed("cpu=70%")...), key("enter")) {
		update(m, msg)
	}
}

func TestAOnAWhatIfShowsItsPatchAndYWritesItOnce(t *testing.T) {
	m := every(nil)
	var applied int
	m.propose = func(ns, name, variant string) (*proposal, error) {
		return &proposal{key: ns + "/" + name, variant: variant, resourceVersion: "42", patch: "{\n  \"metrics\": ...\n}",
			apply: func() (string, error) {
				applied++
				return "Applied cpu=70% to payments/api as field manager kubectl-hpa after a server dry run: resourceVersion 42, now 43", nil
			}}, nil
	}
	whatIfOn(m)
	if !strings.Contains(frame(m), "a apply · w edit") {
		t.Errorf("the what-if's keys lack a apply:\n%s", frame(m))
	}
	update(m, key("a"))
	f := frame(m)
	for _, want := range []string{"apply what if cpu=70%", "Patch of payments/api's spec (JSON merge patch), from cpu=70%:", "both at resourceVersion 42", "y apply · any other key back"} {
		if !strings.Contains(f, want) {
			t.Errorf("the apply screen lacks %q:\n%s", want, f)
		}
	}
	update(m, key("y"))
	if !strings.Contains(frame(m), "now 43") || !strings.Contains(frame(m), "any key back · q quit") || applied != 1 {
		t.Errorf("after y: applied %d times\n%s", applied, frame(m))
	}
	update(m, key("y"))
	if applied != 1 || m.screen != whatIfScreen {
		t.Errorf("y again applied %d times in all and left screen %v; want once, and back to the what-if", applied, m.screen)
	}
}

func TestAnyKeyButYLeavesTheApplyScreenWithoutWriting(t *testing.T) {
	m := every(nil)
	m.propose = func(ns, name, variant string) (*proposal, error) {
		return &proposal{key: ns + "/" + name, variant: variant, resourceVersion: "42", patch: "{}", apply: func() (string, error) {
			t.Error("applied without y")
			return "", nil
		}}, nil
	}
	whatIfOn(m)
	update(m, key("a"))
	update(m, key("n"))
	if m.screen != whatIfScreen || m.outcome != "" {
		t.Errorf("n on the apply screen: screen %v, outcome %q; want the what-if and nothing written", m.screen, m.outcome)
	}
}

func TestARefusedPatchSaysNothingWasWritten(t *testing.T) {
	m := every(nil)
	m.propose = func(ns, name, variant string) (*proposal, error) {
		return &proposal{key: ns + "/" + name, variant: variant, resourceVersion: "42", patch: "{}", apply: func() (string, error) {
			return "", fmt.Errorf("top: nothing written: HPA payments/api was changed since it was read (resourceVersion 42, now 44) by someone-else at 2026-12-07T12:00:00Z: ask what if again of the HPA as it is now")
		}}, nil
	}
	whatIfOn(m)
	update(m, key("a"))
	update(m, key("y"))
	if f := frame(m); !strings.Contains(f, "Nothing written: top: nothing written: HPA payments/api was changed since it was read") {
		t.Errorf("a refused patch:\n%s", f)
	}
}

func TestReadOnlyHidesApply(t *testing.T) {
	m := every(nil)
	whatIfOn(m)
	update(m, key("a"))
	if m.screen != whatIfScreen || strings.Contains(frame(m), "a apply") {
		t.Errorf("with --read-only (no propose) a left the what-if or the keys offer it:\n%s", frame(m))
	}
}

func TestUTunesTheOpenHPA(t *testing.T) {
	m := every(nil)
	m.tick, m.since = nil, time.Hour
	m.tune = func(ns, name string, width int) (string, error) {
		return "Tuning " + ns + "/" + name + "\nObjective: balanced\n", nil
	}
	for _, msg := range []tea.Msg{passMsg{rows: fleet(), at: t0}, key("enter"), key("u")} {
		update(m, msg)
	}
	f := frame(m)
	for _, want := range []string{"payments/api · tune, on the last 1h", "Tuning payments/api", "r tune again · esc back"} {
		if !strings.Contains(f, want) {
			t.Errorf("the tune screen lacks %q:\n%s", want, f)
		}
	}
}

func TestQuittingWhileAWriteIsUnderWayWaitsForIt(t *testing.T) {
	m := every(nil)
	m.propose = func(ns, name, variant string) (*proposal, error) {
		return &proposal{key: ns + "/" + name, variant: variant, resourceVersion: "42", patch: "{}", apply: func() (string, error) {
			return "Applied", nil
		}}, nil
	}
	whatIfOn(m)
	update(m, key("a"))
	_, cmd := m.Update(key("y"))
	if _, quit := m.Update(key("ctrl+c")); quit != nil {
		t.Fatal("ctrl+c during the write ended the program before the write did")
	}
	if _, quit := m.Update(cmd()); quit == nil || quit() != tea.Quit() {
		t.Errorf("the write's end did not end the program the quit asked to end")
	}
}

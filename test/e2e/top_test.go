//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// tmuxPane is a real terminal: a tmux server of the test's own, one window running a command.
type tmuxPane struct {
	t      *testing.T
	socket string
}

// startTmux runs command in a width x height terminal, its environment set by env(1) from env
// (tmux's own environment is the server's). The pane stays after the command ends, so that the
// test reads what it left.
func startTmux(t *testing.T, width, height int, env []string, command string) *tmuxPane {
	t.Helper()
	p := &tmuxPane{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	quoted := make([]string, len(env))
	for i, kv := range env {
		quoted[i] = "'" + strings.ReplaceAll(kv, "'", `'\''`) + "'"
	}
	p.tmux("new-session", "-d", "-s", "e2e", "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), "env "+strings.Join(quoted, " ")+" sh -c '"+strings.ReplaceAll(command, "'", `'\''`)+"'")
	p.tmux("set-option", "-t", "e2e", "remain-on-exit", "on")
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", p.socket, "kill-server").Run() })
	return p
}

func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// keys sends key names (Enter, Escape, /) as tmux names them.
func (p *tmuxPane) keys(keys ...string) {
	p.tmux(append([]string{"send-keys", "-t", "e2e"}, keys...)...)
}

// text types s literally.
func (p *tmuxPane) text(s string) { p.tmux("send-keys", "-t", "e2e", "-l", s) }

// screen is what the terminal shows now, as text, lines the terminal wrapped joined.
func (p *tmuxPane) screen() string { return p.tmux("capture-pane", "-p", "-J", "-t", "e2e") }

// state is a tmux format's value for the pane (#{alternate_on}, #{cursor_flag}, ...).
func (p *tmuxPane) state(format string) string {
	return strings.TrimSpace(p.tmux("display-message", "-p", "-t", "e2e", format))
}

// waitScreen waits until the screen holds every one of want and returns it.
func (p *tmuxPane) waitScreen(what string, want ...string) string {
	p.t.Helper()
	var s string
	eventually(p.t, time.Minute, what, func(context.Context) error {
		s = p.screen()
		for _, w := range want {
			if !strings.Contains(s, w) {
				return fmt.Errorf("the screen lacks %q:\n%s", w, s)
			}
		}
		return nil
	})
	return s
}

// leftAsItWas checks, after top ended by how, that it exited 0 and left the terminal as it
// was: the alternate screen left, the cursor shown, echo on (stty -a after it).
func (p *tmuxPane) leftAsItWas(how string) {
	p.t.Helper()
	// stty -a prints after the exit line; its last line holds echoke (or -echoke).
	after := p.waitScreen(how+" ends top", "top exited 0", "echoke")
	if alt := p.state("#{alternate_on}"); alt != "0" {
		p.t.Errorf("after %s the alternate screen is still on (#{alternate_on} %s)", how, alt)
	}
	if cursor := p.state("#{cursor_flag}"); cursor != "1" {
		p.t.Errorf("after %s the cursor is hidden (#{cursor_flag} %s)", how, cursor)
	}
	if !strings.Contains(after, " echo ") || strings.Contains(after, " -echo ") {
		p.t.Errorf("after %s the terminal does not echo (stty -a):\n%s", how, after)
	}
}

// lineWith is the first line of s that holds sub, trimmed.
func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// TestTopInATerminalShowsTheFleetFiltersOpensAnHPAAsExplainAndLeavesTheTerminalAsItWas runs
// `kubectl hpa top -A` through kubectl in a real terminal (tmux), over the shared cluster's
// HPAs, one of them this test's: 2 pods at 60% of their cpu request against 50%, so 3. It
// types a filter (/ and the namespace), sees that HPA's row alone, opens it (Enter) and reads
// its verdict and binding constraint equal to explain's at the same moment, and its timeline
// (t) as kubectl hpa timeline prints it, and a what-if (w, cpu=70%) as kubectl hpa simulate
// plays it on the load Prometheus holds. a makes the what-if a patch: refused when another
// manager changed the spec before y, then, read anew, written after a server dry run, which the
// audit log shows and nothing else; u tunes it as kubectl hpa tune does; q leaves the
// terminal as it was (no alternate screen, cursor shown, echo on) with exit code 0, and so does
// SIGTERM to a second top; top wrote nothing. Without a terminal it exits 2 naming list -w.
func TestTopInATerminalShowsTheFleetFiltersOpensAnHPAAsExplainAndLeavesTheTerminalAsItWas(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "top")
	loadedWorkload(t, ns, 2, 120)
	createHPA(t, ns, hpaSpec{})
	waitMetricsAfterReadiness(t, ns)
	listWriteStatus(t, ns, 2, 3, nil)

	prom, err := shared.Prometheus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The cluster's sync period as top is told it, which timeline and simulate then take.
	promFlags := []string{"--prometheus-url", prom.URL(), "--prometheus-insecure-http", "--sync-period", "2s"}

	const user = "e2e:kubectl-hpa-top"
	k := pluginAs(t, user)
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}

	// No terminal: exit 2, and where to go instead.
	_, err = k.Run(context.Background(), "hpa", "top", "-n", ns)
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 2 || !strings.Contains(err.Error(), "kubectl hpa list -w") {
		t.Errorf("top without a terminal: %v; want exit code 2 naming kubectl hpa list -w", err)
	}

	command := `kubectl hpa top -A ` + strings.Join(promFlags, " ") + `; echo "top exited $?"; stty -a; exec sleep 600`
	pane := startTmux(t, 200, 50, kubectlEnv(k), command)
	fleet := pane.waitScreen("top shows the fleet with this test's HPA", "kubectl hpa top · every namespace", ns)
	t.Logf("top -A, first screen:\n%s", fleet)

	pane.keys("/")
	pane.text(ns)
	pane.keys("Enter")
	filtered := pane.waitScreen("the filter leaves this test's HPA alone", "filter "+ns)
	if rows := strings.Count(filtered, "Deployment/web"); rows != 1 || !strings.Contains(lineWith(filtered, ns), " web ") {
		t.Errorf("after /%s: %d rows on Deployment/web, want this namespace's one:\n%s", ns, rows, filtered)
	}

	pane.keys("Enter")
	pane.waitScreen("Enter opens the HPA as explain shows it", "kubectl hpa top · "+ns+"/web", "Verdict:")
	// Both decide from live metrics: compare screens and explain's output of the same moment.
	eventually(t, time.Minute, "top's verdict equals explain's", func(ctx context.Context) error {
		out, err := k.Run(ctx, "hpa", "explain", "web", "-n", ns)
		if err != nil {
			return err
		}
		s := pane.screen()
		for _, field := range []string{"Verdict:", "Binding constraint:"} {
			if got, want := lineWith(s, field), lineWith(out, field); got != want || want == "" {
				return fmt.Errorf("top's %q, explain's %q\nscreen:\n%s", got, want, s)
			}
		}
		t.Logf("top's HPA screen:\n%s", s)
		return nil
	})

	// The feed decides again every --sync-period: the HPA's session grows on screen.
	pane.waitScreen("top decided again twice", "This session (3 passes, every 2s")

	// t: its timeline, as kubectl hpa timeline prints it (replayed from Prometheus, once it
	// holds the pods' series).
	var out string
	eventually(t, 2*time.Minute, "timeline replays the HPA from Prometheus", func(ctx context.Context) error {
		out, err = k.Run(ctx, append([]string{"hpa", "timeline", "web", "-n", ns, "--since", "1h"}, promFlags...)...)
		return err
	})
	pane.keys("t")
	past := pane.waitScreen("t shows the HPA's timeline", "timeline, the last 1h", "Timeline of "+ns+"/web from")
	for _, field := range []string{"Source:", "Spec:"} {
		if got, want := lineWith(past, field), lineWith(out, field); got != want || want == "" {
			t.Errorf("top's timeline %q, timeline's %q", got, want)
		}
	}
	t.Logf("top's timeline screen:\n%s", past)
	pane.keys("Escape")
	pane.waitScreen("Esc goes back to the HPA's screen", "kubectl hpa top · "+ns+"/web · decided")

	// w: what if its target were 70%, played on its load in Prometheus as simulate plays it.
	pane.keys("w")
	pane.text("cpu=70%")
	pane.keys("Enter")
	whatIf := pane.waitScreen("w plays the what-if through simulate", "what if cpu=70%, on the last 1h", "Variants:")
	out, err = k.Run(context.Background(), append([]string{"hpa", "simulate", "web", "-n", ns, "--from-prometheus", "--since", "1h", "--variant", "edited=cpu=70%"}, promFlags...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"  current ", "  edited "} {
		if got, want := lineWith(whatIf, row), lineWith(out, row); got != want || want == "" {
			t.Errorf("top's what-if variant row %q, simulate's %q", got, want)
		}
	}
	t.Logf("top's what-if screen:\n%s", whatIf)

	// a: the what-if as a patch. Another manager changes the spec before y: refused, nothing
	// written. a again (the HPA read anew) and y: a server dry run, then the patch.
	applyMark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	pane.keys("a")
	pane.waitScreen("a shows the what-if's patch", "Patch of "+ns+"/web's spec (JSON merge patch), from cpu=70%:", "y apply")
	hpas := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns)
	if _, err := hpas.Patch(context.Background(), "web", types.MergePatchType, []byte(`{"spec":{"maxReplicas":9}}`), metav1.PatchOptions{FieldManager: "e2e-other-manager"}); err != nil {
		t.Fatal(err)
	}
	pane.keys("y")
	refused := pane.waitScreen("y on a spec changed since is refused", "Nothing written: top: nothing written: HPA "+ns+"/web was changed since it was read")
	if !strings.Contains(refused, "by e2e-other-manager") {
		t.Errorf("the refusal does not name the other manager:\n%s", refused)
	}
	// A key right after Escape would read as alt+key: wait for the screen Escape leads to.
	pane.keys("Escape")
	pane.waitScreen("Esc goes back to the what-if", "a apply · w edit")
	pane.keys("a")
	pane.waitScreen("a again reads the HPA anew", "Patch of "+ns+"/web's spec", "y apply")
	pane.keys("y")
	applied := pane.waitScreen("y writes the patch", "Applied cpu=70% to "+ns+"/web as field manager kubectl-hpa after a server dry run")
	t.Logf("top's apply screen:\n%s", applied)
	got, err := hpas.Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := got.Spec.Metrics[0].Resource.Target.AverageUtilization; u == nil || *u != 70 || got.Spec.MaxReplicas != 9 {
		t.Errorf("after y the spec has cpu %v%% and max %d, want 70%% and the other manager's 9", u, got.Spec.MaxReplicas)
	}
	// The audit log: the refused dry run (409), then the dry run and the patch; nothing else.
	var writes []string
	eventually(t, 10*time.Second, "top's writes complete in the audit log", func(context.Context) error {
		reqs, err := shared.AuditSince(applyMark, cluster.AuditFilter{User: user, Namespace: ns, WritesOnly: true})
		if err != nil {
			return err
		}
		writes = writes[:0]
		for _, r := range reqs {
			if r.Completed.IsZero() {
				return fmt.Errorf("%s not complete", r)
			}
			dry := strings.Contains(r.RequestURI, "dryRun=All")
			writes = append(writes, fmt.Sprintf("%s %s/%s dry-run=%v %d", r.Verb, r.Resource, r.Name, dry, r.Code))
		}
		return nil
	})
	want := []string{"patch horizontalpodautoscalers/web dry-run=true 409", "patch horizontalpodautoscalers/web dry-run=true 200", "patch horizontalpodautoscalers/web dry-run=false 200"}
	if strings.Join(writes, "; ") != strings.Join(want, "; ") {
		t.Errorf("top's writes %q, want %q", writes, want)
	}
	pane.keys("Escape")
	pane.waitScreen("Esc goes back to the what-if", "a apply · w edit")
	pane.keys("Escape")
	pane.waitScreen("Esc goes back to the HPA's screen", "kubectl hpa top · "+ns+"/web · decided")

	// u: tune on the same load, as kubectl hpa tune --from-prometheus prints it.
	pane.keys("u")
	tuned := pane.waitScreen("u shows tune's recommendation", "tune, on the last 1h", "Objective:")
	out, err = k.Run(context.Background(), append([]string{"hpa", "tune", "web", "-n", ns, "--from-prometheus", "--since", "1h"}, promFlags...)...)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := lineWith(tuned, "Objective:"), lineWith(out, "Objective:"); got != want || want == "" {
		t.Errorf("top's tuning %q, tune's %q", got, want)
	}
	t.Logf("top's tune screen:\n%s", tuned)
	pane.keys("Escape")
	pane.waitScreen("Esc goes back to the HPA's screen", "kubectl hpa top · "+ns+"/web · decided")

	pane.keys("Escape")
	pane.waitScreen("Esc goes back to the fleet", "filter "+ns, "WOULD BE")
	pane.keys("q")
	pane.leftAsItWas("q")

	// SIGTERM (a supervisor, kill) restores the terminal too, and exits 0.
	term := startTmux(t, 120, 30, kubectlEnv(k), command)
	term.waitScreen("a second top shows the fleet", "kubectl hpa top · every namespace")
	if err := syscall.Kill(descendant(t, term.state("#{pane_pid}"), "kubectl-hpa"), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	term.leftAsItWas("SIGTERM")

	// Besides the patch above, nothing; and the patch was printed once top ended.
	if w := pluginWrites(t, mark, user); len(w) != 3 {
		t.Errorf("top wrote %d requests, want the 3 of the patch: %v", len(w), w)
	}
	if line := lineWith(pane.screen(), "Applied cpu=70%"); !strings.Contains(line, `patch {"spec":`) {
		t.Errorf("after q the terminal lacks the write top made (%q)", line)
	}
}

// descendant is the PID, in the test's own PID namespace, of the process named comm among
// pid's descendants (kubectl may run the plugin a process or two below the shell). The tests
// run in a PID namespace of their own (cluster.RunIsolated) under the host's /proc, which
// names processes by their host PIDs: NSpid in each one's status maps the two.
func descendant(t *testing.T, pid, comm string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	type proc struct {
		name, ppid, nspid string
		// nested says the process is in a PID namespace below the host's, as the test is.
		nested bool
	}
	procs := map[string]proc{}
	children := map[string][]string{}
	var root []string
	for _, e := range entries {
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue // not a process, or gone
		}
		var p proc
		for _, l := range strings.Split(string(status), "\n") {
			k, v, _ := strings.Cut(l, ":")
			switch f := strings.Fields(v); k {
			case "Name":
				p.name = strings.TrimSpace(v)
			case "PPid":
				p.ppid = strings.TrimSpace(v)
			case "NSpid":
				if len(f) > 0 {
					p.nspid, p.nested = f[len(f)-1], len(f) > 1
				}
			}
		}
		procs[e.Name()] = p
		children[p.ppid] = append(children[p.ppid], e.Name())
		if p.nested && p.nspid == pid {
			root = append(root, e.Name())
		}
	}
	for queue := root; len(queue) > 0; queue = queue[1:] {
		for _, c := range children[queue[0]] {
			if procs[c].name == comm {
				n, err := strconv.Atoi(procs[c].nspid)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			queue = append(queue, c)
		}
	}
	t.Fatalf("no process %s under %s", comm, pid)
	return 0
}

// kubectlEnv is the environment k.Command gives kubectl, for a command tmux starts.
func kubectlEnv(k cluster.Kubectl) []string {
	cmd := k.Command(context.Background())
	var out []string
	for _, kv := range cmd.Env {
		for _, name := range []string{"PATH=", "KUBECONFIG=", "KUBECACHEDIR=", "HOME="} {
			if strings.HasPrefix(kv, name) {
				out = append(out, kv)
			}
		}
	}
	return append(out, "TERM=xterm-256color")
}

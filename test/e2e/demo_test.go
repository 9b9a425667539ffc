//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// demoEnv names the demo binary (`make demo`'s test/e2e/demo).
const demoEnv = "KUBECTL_HPA_DEMO"

// lineLog collects a stream's lines as they come, for waiting on one.
type lineLog struct {
	mu    sync.Mutex
	lines []string
	done  bool
}

func (l *lineLog) follow(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l.mu.Lock()
		l.lines = append(l.lines, sc.Text())
		l.mu.Unlock()
	}
	l.mu.Lock()
	l.done = true
	l.mu.Unlock()
}

func (l *lineLog) snapshot() ([]string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...), l.done
}

func (l *lineLog) String() string {
	lines, _ := l.snapshot()
	return strings.Join(lines, "\n")
}

// lineContaining matches a log with a line that contains sub.
func lineContaining(sub string) func([]string) bool {
	return func(lines []string) bool {
		return slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, sub) })
	}
}

// waitFor polls the log until match finds what it wants in it.
func (l *lineLog) waitFor(t *testing.T, bound time.Duration, what string, match func([]string) bool) {
	t.Helper()
	eventually(t, bound, what, func(context.Context) error {
		lines, done := l.snapshot()
		if match(lines) {
			return nil
		}
		if done {
			t.Fatalf("the stream ended before %s:\n%s", what, strings.Join(lines, "\n"))
		}
		return errors.New("not yet")
	})
}

// demoProcess is `make demo`'s program started as a terminal starts a foreground job: its own
// process group, stdout and stderr on pipes the test reads.
type demoProcess struct {
	stdout, stderr lineLog
	exited         chan error
	pgid           int
	outR           *os.File
	// log is the demo's log file (KUBECTL_HPA_DEMO_LOG).
	log string
}

func startDemo(t *testing.T) *demoProcess {
	t.Helper()
	bin := os.Getenv(demoEnv)
	if bin == "" {
		t.Fatalf("%s is not set; run `make test-e2e`", demoEnv)
	}
	cmd := exec.Command(bin)
	// The demo makes a network namespace of its own, nested in this one: it must not think it
	// is already isolated.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECTL_HPA_E2E_HOST_NETNS=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// Not the default /tmp/kubectl-hpa-demo.log, which a demo of the user's may be writing.
	d := &demoProcess{exited: make(chan error, 1), log: filepath.Join(t.TempDir(), "demo.log")}
	cmd.Env = append(cmd.Env, "KUBECTL_HPA_DEMO_LOG="+d.log)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	errW.Close()
	d.outR, d.pgid = outR, cmd.Process.Pid
	go func() { d.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case <-d.exited:
		default:
			_ = syscall.Kill(-d.pgid, syscall.SIGKILL)
		}
	})
	go d.stdout.follow(outR)
	go d.stderr.follow(errR)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("demo stderr:\n%s\ndemo stdout:\n%s", d.stderr.String(), d.stdout.String())
		}
	})
	return d
}

// exitCode waits (up to bound) for the demo to exit and returns its exit code.
func (d *demoProcess) exitCode(t *testing.T, bound time.Duration) int {
	t.Helper()
	select {
	case err := <-d.exited:
		var exit *exec.ExitError
		switch {
		case err == nil:
			return 0
		case errors.As(err, &exit):
			return exit.ExitCode()
		default:
			t.Fatalf("waiting for the demo: %v", err)
		}
	case <-time.After(bound):
		t.Fatalf("the demo did not exit within %s of Ctrl-C", bound)
	}
	return -1
}

// TestDemoCtrlCInEveryPhaseStopsCleanly: Ctrl-C while the cluster starts, while the demo
// waits for pod metrics and while it explains: one line says what was stopped, nothing after
// it starts (no run), every process and the run directory are gone, exit 130. (Ctrl-C while
// run runs: TestDemoPrintedCommandsWorkAndCtrlCTearsDownInOrder.)
func TestDemoCtrlCInEveryPhaseStopsCleanly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		phase string
		// at is the demo's line after which Ctrl-C comes, wait how long after it.
		at    string
		wait  time.Duration
		bound time.Duration
	}{
		{phase: "starting the cluster", at: "demo: starting the cluster", wait: 1500 * time.Millisecond, bound: time.Minute},
		{phase: "waiting for metrics-server's first pod metrics", at: "demo: waiting for metrics-server's first pod metrics", bound: 3 * time.Minute},
		{phase: "explaining the HPA from metrics-server and from Heapster", at: "demo: waiting for Heapster to sample a full window", wait: 2 * time.Second, bound: 5 * time.Minute},
	} {
		t.Run(tc.phase, func(t *testing.T) {
			t.Parallel()
			d := startDemo(t)
			d.stderr.waitFor(t, tc.bound, "the demo says "+tc.at, lineContaining(tc.at))
			time.Sleep(tc.wait)
			if err := syscall.Kill(-d.pgid, syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			if code := d.exitCode(t, 90*time.Second); code != 130 {
				t.Errorf("exit code %d after Ctrl-C, want 130", code)
			}
			d.stderr.waitFor(t, 10*time.Second, "the demo's stderr ends", func([]string) bool { _, done := d.stderr.snapshot(); return done })
			lines, _ := d.stderr.snapshot()
			contains(t, d.stderr.String(), "demo: stopped while "+tc.phase+"; nothing after it was started")
			for _, l := range lines {
				for _, bad := range []string{"$ kubectl hpa run", "poke at the cluster", "explain failed", "context canceled", "not ready after"} {
					if strings.Contains(l, bad) {
						t.Errorf("after Ctrl-C the demo said %q", l)
					}
				}
			}
			// The run directory: the demo names it when it removes it (its cluster's
			// teardown, or the parent when the cluster was not up).
			var dir string
			for _, l := range lines {
				if _, after, ok := strings.Cut(l, "removed "); ok {
					dir = after
				}
			}
			if dir == "" {
				t.Fatalf("the demo never said it removed its run directory")
			}
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("run directory %s after the demo: %v, want it removed", dir, err)
			}
			// Every process of the demo's group is gone.
			if err := syscall.Kill(-d.pgid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("the demo's process group still has processes after it exited (kill 0: %v)", err)
			}
		})
	}
}

// TestDemoPrintedCommandsWorkAndCtrlCTearsDownInOrder starts `make demo`'s program as a
// terminal would (its own process group, the foreground job) with stdout on a pipe, runs the
// commands it prints exactly as printed (through sh, as a paste would), then does what
// `make demo | tee log` and Ctrl-C do: SIGINT to the whole group while the pipe's reader
// goes away. The demo must stop its run first (the Lease released while the API server still
// answers), then the cluster, exit 0 and leave no run directory (keys, tokens, etcd data); its
// log has the teardown the closed pipe did not carry.
func TestDemoPrintedCommandsWorkAndCtrlCTearsDownInOrder(t *testing.T) {
	t.Parallel()
	d := startDemo(t)
	stdout, stderr, pgid, outR, demoLog := &d.stdout, &d.stderr, d.pgid, d.outR, d.log

	// The bounds are the demo's own: its cluster start as the suite's (3 min), then its waits
	// for pod metrics (90s) and for a full Heapster window (3 min), plus the explanations.
	stderr.waitFor(t, 3*time.Minute, "the demo's cluster is ready", lineContaining("demo: cluster ready in "))
	var commands []string
	stderr.waitFor(t, 90*time.Second+3*time.Minute+time.Minute, "the demo prints the commands to poke at it", func(lines []string) bool {
		commands = nil
		for i, l := range lines {
			if strings.Contains(l, "poke at the cluster from another terminal") {
				for _, c := range lines[i+1:] {
					if !strings.HasPrefix(c, "    ") {
						break
					}
					commands = append(commands, c)
				}
			}
		}
		return len(commands) == 3
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Each printed line is a plain command (no quoting, no shell syntax), so splitting it at
	// blanks runs exactly what a shell would run when it is pasted.
	sh := func(line string) *exec.Cmd {
		if strings.ContainsAny(line, "'\"$`\\|&;<>(){}*?~#") {
			t.Fatalf("printed command %q is not a plain command to paste", line)
		}
		f := strings.Fields(line)
		c := exec.CommandContext(ctx, f[0], f[1:]...)
		c.Env = os.Environ() // no KUBECONFIG: the wrapper brings its own
		return c
	}
	// kubectl get and kubectl hpa explain, exactly as printed.
	out, err := sh(commands[0]).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", commands[0], err, out)
	}
	contains(t, string(out), "horizontalpodautoscaler.autoscaling/web", "deployment.apps/web")
	out, err = sh(commands[1]).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", commands[1], err, out)
	}
	if lines := strings.Split(string(out), "\n"); len(lines) < 5 || strings.Join(strings.Fields(lines[0]), " ") != "Name: web" || !strings.HasPrefix(lines[3], "Verdict:") {
		t.Errorf("%s printed, want the explanation of web leading with its verdict:\n%s", commands[1], out)
	}
	// The second, dry run: it decides (one line per decision off a terminal) and stops on
	// Ctrl-C with exit 0.
	dry := sh(commands[2])
	dry.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dryOut, err := dry.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var dryErr lineLog
	dryErrR, err := dry.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := dry.Start(); err != nil {
		t.Fatal(err)
	}
	var dryLines lineLog
	go dryLines.follow(dryOut)
	go dryErr.follow(dryErrR)
	dryLines.waitFor(t, time.Minute, "the dry run decides for demo/web", lineContaining(" demo/web "))
	// Ctrl-C: the terminal signals the command's process group.
	if err := syscall.Kill(-dry.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := dry.Wait(); err != nil {
		t.Errorf("%s after Ctrl-C: %v, want exit 0; stderr:\n%s", commands[2], err, dryErr.String())
	}

	// The demo's own run writes (it holds the Lease) before it is stopped.
	stdout.waitFor(t, time.Minute, "the demo's run decides for demo/web", lineContaining(" demo/web "))
	// Ctrl-C in `make demo | tee log`: the terminal signals the foreground group, and tee,
	// the pipe's reader, is gone.
	outR.Close()
	if err := syscall.Kill(-pgid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := d.exitCode(t, 90*time.Second); code != 130 {
		t.Errorf("demo after Ctrl-C: exit code %d, want 130", code)
	}
	// Everything the demo said reaches the log before it exits.
	stderr.waitFor(t, 10*time.Second, "the demo's stderr ends", func([]string) bool { _, done := stderr.snapshot(); return done })
	log := stderr.String()
	contains(t, log, "run released its Lease demo/kubectl-hpa", "demo: stopped while kubectl hpa run was running")
	runDir := filepath.Dir(strings.Fields(commands[0])[0])
	contains(t, log, "stopped; removed "+runDir)
	if _, err := os.Stat(runDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run directory %s after the demo: %v, want it removed", runDir, err)
	}
	// The log has both streams, the decisions run printed to the pipe now closed included, up
	// to the parent's last line naming it.
	logged, err := os.ReadFile(demoLog)
	if err != nil {
		t.Fatalf("the demo's log: %v", err)
	}
	contains(t, string(logged), "demo: this output is also written to "+demoLog, " demo/web ", "demo: tearing down", "stopped; removed "+runDir, "demo: the whole output is in "+demoLog)
}

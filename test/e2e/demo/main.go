// Command demo starts the end-to-end cluster with a sample namespace whose load rises and
// falls, runs "kubectl hpa explain" on the same load from metrics-server and from the real
// Heapster, then "kubectl hpa run" in the foreground, and tears everything down on Ctrl-C.
// `make demo` builds and starts it.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/term"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

const (
	demoNamespace = "demo"
	demoApp       = "web"
)

// phase is one stretch of the demo's load cycle.
type phase struct {
	cpuMilli int64
	hold     time.Duration
	what     string
}

// cycle rises from a quiet start to a peak that needs several replicas, then falls back so the
// loop scales down once the (shortened) stabilization window has passed; then it repeats.
func cycle() []phase {
	return []phase{
		{150, 40 * time.Second, "quiet: 150m in total"},
		{800, 90 * time.Second, "peak: 800m in total (needs 8 pods at 50% of 200m)"},
		{100, 120 * time.Second, "low: 100m in total"},
	}
}

// runDirEnv hands the run directory, made by the parent before the namespaces, to the
// isolated child.
const runDirEnv = "KUBECTL_HPA_DEMO_DIR"

// logEnv names the file the demo writes its whole output to besides the console; unset, it is
// defaultLogPath. The parent creates the file afresh and hands its path to the isolated child,
// which appends to it.
const logEnv = "KUBECTL_HPA_DEMO_LOG"

// defaultLogPath is a stable place, named when the demo starts and when it ends.
func defaultLogPath() string { return filepath.Join(os.TempDir(), "kubectl-hpa-demo.log") }

func main() {
	parent := !cluster.Isolated()
	if parent {
		// Nothing the parent writes may end it before it has cleaned up.
		signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	}
	logPath, log := setUpLog(parent)
	s := newStreams(os.Stdout, os.Stderr, log)
	// The run directory holds keys, tokens and etcd data. The parent makes it and removes it
	// once the isolated child has exited, however the child ended (a crash, a kill); the
	// child removes it itself after an orderly teardown.
	if parent {
		if logPath != "" {
			s.say("this output is also written to %s%s", logPath, tableNote())
		}
		dir, err := os.MkdirTemp("", "kubectl-hpa-demo-")
		if err != nil {
			s.say("creating the run directory: %v", err)
			os.Exit(1)
		}
		os.Setenv(runDirEnv, dir)
	}
	code, isParent, err := cluster.RunIsolated(cluster.DefaultIP)
	if err == nil && !isParent {
		err = run(s)
		var stopped *interrupted
		switch {
		case errors.As(err, &stopped):
			// One line, what was stopped: the teardown said the rest.
			s.say("%v", err)
			err, code = nil, exitInterrupted
		case err != nil:
			code = 1
		}
	}
	if err != nil {
		s.say("%v", err)
		if code == 0 {
			code = 1
		}
	}
	if isParent {
		if dir := os.Getenv(runDirEnv); removeRunDir(dir) {
			// The child removes it after an orderly teardown; here it was left behind (the
			// child stopped before its cluster was up, or crashed).
			s.say("removed %s", dir)
		}
		if logPath != "" {
			s.say("the whole output is in %s", logPath)
		}
	}
	os.Exit(code)
}

// runPhase is the demo's last step: stopping it is how the demo ends.
const runPhase = "kubectl hpa run was running"

// exitInterrupted is the exit code of a demo stopped by Ctrl-C (SIGTERM, a closed output), as a
// shell reports a command SIGINT ended.
const exitInterrupted = 130

// interrupted is the demo stopped by a signal (or its output closed) while doing phase, and
// whether steps after it were left unstarted.
type interrupted struct {
	phase string
	more  bool
}

func (e *interrupted) Error() string {
	if e.more {
		return "stopped while " + e.phase + "; nothing after it was started"
	}
	return "stopped while " + e.phase
}

// setUpLog opens the log logEnv names: the parent names defaultLogPath when logEnv is unset
// and creates the file afresh, the isolated child appends to it. Without a log it returns ""
// and nil, and the output goes to the console only. The log is never closed: the demo ends
// with os.Exit, and each write went straight to the file.
func setUpLog(parent bool) (string, io.Writer) {
	if parent && os.Getenv(logEnv) == "" {
		os.Setenv(logEnv, defaultLogPath())
	}
	path := os.Getenv(logEnv)
	if path == "" {
		return "", nil
	}
	f, err := openLog(path, parent)
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v; the output goes to the console only\n", err)
		os.Unsetenv(logEnv) // the child would fail alike
		return "", nil
	}
	return path, f
}

// openLog opens the demo's log for appending: afresh (truncated) in the parent, which runs
// first, as it is in the isolated child. It does not follow a symbolic link: the default path
// is in a shared /tmp and the demo runs as root.
func openLog(path string, fresh bool) (*os.File, error) {
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND | syscall.O_NOFOLLOW
	if fresh {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the log: %w", err)
	}
	return f, nil
}

// tableNote says what the log lacks when stdout is a terminal: run then draws its live table
// there, in place, and nothing else sees it.
func tableNote() string {
	if term.IsTerminal(int(os.Stdout.Fd())) {
		return " (all but run's live table, which only the terminal shows)"
	}
	return ""
}

// streams are the demo's stdout and stderr: each write goes to the console and to the log.
type streams struct{ out, err, log io.Writer }

// newStreams tees stdout and stderr into log (nil: the console only).
func newStreams(stdout, stderr, log io.Writer) streams {
	if log == nil {
		log = io.Discard
	}
	return streams{out: tee{console: stdout, log: log}, err: tee{console: stderr, log: log}, log: log}
}

func (s streams) say(format string, args ...any) {
	fmt.Fprintf(s.err, "demo: "+format+"\n", args...)
}

// record says a line in the log only: while run's table is on the terminal, a line there
// would break its redraw.
func (s streams) record(format string, args ...any) {
	fmt.Fprintf(s.log, "%s demo: "+format+"\n", append([]any{time.Now().UTC().Format(time.RFC3339)}, args...)...)
}

// tee writes each write whole to the log and to the console, and never fails: a console that
// went away (`make demo | tee log`, whose tee the same Ctrl-C ends) costs the log nothing, and
// the demo learns that nobody watches from SIGPIPE, which run handles. A log that cannot be
// written costs the console nothing either.
type tee struct{ console, log io.Writer }

func (t tee) Write(p []byte) (int, error) {
	_, _ = t.log.Write(p)
	_, _ = t.console.Write(p)
	return len(p), nil
}

// removeRunDir removes the run directory unless cluster.KeepEnv asks to keep it, and says
// whether there was one to remove.
func removeRunDir(dir string) bool {
	if dir == "" || os.Getenv(cluster.KeepEnv) != "" {
		return false
	}
	if _, err := os.Stat(dir); err != nil {
		return false
	}
	_ = os.RemoveAll(dir)
	return true
}

func run(s streams) (err error) {
	// A closed stdout or stderr (`make demo | tee log`, then Ctrl-C ends tee) means nobody
	// watches any more: tear down as for Ctrl-C. Handling SIGPIPE also turns writes to the
	// closed pipe into errors instead of ending the demo before its teardown; the log still
	// gets every line.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGPIPE)
	defer stop()
	bin, pluginDir := os.Getenv("KUBECTL_HPA_TESTBIN"), os.Getenv("KUBECTL_HPA_PLUGIN_DIR")
	if bin == "" || pluginDir == "" {
		return errors.New("KUBECTL_HPA_TESTBIN and KUBECTL_HPA_PLUGIN_DIR must be set; run `make demo`")
	}
	// A step that fails once the demo is told to stop was cut short by the stop: it says so,
	// not what the cut made of the step (a probe's "context canceled").
	phase := "starting the cluster"
	stopped := func(err error) error {
		if ctx.Err() != nil {
			return &interrupted{phase: phase, more: phase != runPhase}
		}
		return err
	}
	s.say("starting the cluster (etcd, kube-apiserver, kube-controller-manager, metrics-server, Heapster, node and Heapster stand-ins)")
	t0 := time.Now()
	dir := os.Getenv(runDirEnv)
	c, err := cluster.Start(ctx, cluster.Config{BinDir: bin, Dir: dir, Progress: func(f string, a ...any) { s.say("  "+f, a...) }})
	if err != nil {
		return stopped(err)
	}
	defer func() {
		s.say("tearing down")
		err = errors.Join(err, c.Stop())
		removeRunDir(c.Dir())
		s.say("stopped; removed %s", c.Dir())
	}()
	s.say("cluster ready in %.1fs", time.Since(t0).Seconds())

	phase = "creating the sample Deployment and HPA"
	if err := sample(ctx, c); err != nil {
		return stopped(err)
	}
	wrapper, err := writeKubectlWrapper(c, pluginDir)
	if err != nil {
		return err
	}

	k := c.Kubectl(c.PluginKubeconfig(), pluginDir)
	// Both explanations read the load of the cycle's first phase; the cycle starts after them.
	first := cycle()[0]
	c.Load().Set(cluster.Workload{Namespace: demoNamespace, Selector: map[string]string{"app": demoApp}}, cluster.Load{CPUMilli: first.cpuMilli, MemoryBytes: 128 << 20})
	s.say("the explanations read this load: %s", first.what)
	phase = "waiting for metrics-server's first pod metrics"
	s.say("waiting for metrics-server's first pod metrics (two scrapes)")
	if err := waitForMetrics(ctx, k, s); err != nil {
		return stopped(err)
	}
	phase = "explaining the HPA from metrics-server and from Heapster"
	if err := explainBothSources(ctx, k, s); err != nil {
		if ctx.Err() != nil {
			return stopped(err)
		}
		s.say("explain failed: %v", err)
	}
	if ctx.Err() != nil {
		return stopped(nil)
	}
	// On a terminal run redraws its table in place: a line printed under it would break the
	// redraw, so the load's phases are announced once, before the table.
	var tableUp atomic.Bool
	announce := func(format string, args ...any) {
		if !tableUp.Load() {
			s.say(format, args...)
			return
		}
		s.record(format, args...)
	}
	printCommands(s.err, wrapper)
	go driveLoad(ctx, c, announce)
	if term.IsTerminal(int(os.Stdout.Fd())) {
		var phases []string
		for _, p := range cycle() {
			phases = append(phases, fmt.Sprintf("%s for %s", p.what, p.hold))
		}
		s.say("the load repeats: %s", strings.Join(phases, ", then "))
		tableUp.Store(true)
	}
	args := []string{"hpa", "run", "-n", demoNamespace, "--downscale-stabilization=30s", "--sync-period=5s"}
	s.say("$ kubectl %s   (Ctrl-C to stop and tear down)", strings.Join(args, " "))
	phase = runPhase
	err = runInForeground(ctx, k.Command(context.Background(), args...), s)
	if ctx.Err() != nil {
		s.say("%s", leaseState(c))
		return errors.Join(err, stopped(nil))
	}
	if err != nil {
		return err
	}
	s.say("%s", leaseState(c))
	return nil
}

// printCommands prints, one to a line and ready to paste, what a user may run against the
// cluster from another terminal. The block goes out in one write: the load driver says its
// phases on the same stream, and a line of it inside the block would split what a user copies.
func printCommands(w io.Writer, wrapper string) {
	var b strings.Builder
	b.WriteString("demo: poke at the cluster from another terminal while this runs (as root: the API server lives in a private network namespace):\n")
	for _, args := range [][]string{
		{"get", "hpa,deploy,pods", "-n", demoNamespace},
		{"hpa", "explain", demoApp, "-n", demoNamespace},
		{"hpa", "run", "-n", demoNamespace, "--dry-run=client"},
	} {
		fmt.Fprintf(&b, "%s%s %s\n", commandIndent, wrapper, strings.Join(args, " "))
	}
	_, _ = io.WriteString(w, b.String())
}

// commandIndent starts each printed command line: a shell ignores it when the line is pasted.
const commandIndent = "    "

// runInForeground runs kubectl hpa run until it ends or ctx is done, then stops it with one
// SIGINT and waits for it: it runs in its own process group, so the terminal's Ctrl-C reaches
// only the demo, which stops run before the cluster (run releases its Lease while the API
// server still answers). Its output goes through the demo's streams (into the log too) unless
// stdout is a terminal, so that a closed pipe costs run nothing: it is never ended by SIGPIPE
// mid-stop.
func runInForeground(ctx context.Context, cmd *exec.Cmd, s streams) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var copied sync.WaitGroup
	copyTo := func(dst io.Writer) (io.Writer, error) {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		copied.Go(func() {
			defer r.Close()
			// dst never fails (a tee), so reading on to EOF keeps run unblocked.
			_, _ = io.Copy(dst, r)
		})
		return w, nil
	}
	cmd.Stdout = os.Stdout
	var pipes []io.Closer
	if !term.IsTerminal(int(os.Stdout.Fd())) {
		w, err := copyTo(s.out)
		if err != nil {
			return err
		}
		cmd.Stdout, pipes = w, append(pipes, w.(io.Closer))
	}
	w, err := copyTo(s.err)
	if err != nil {
		return err
	}
	cmd.Stderr, pipes = w, append(pipes, w.(io.Closer))
	err = cmd.Start()
	// The child holds its own copies of the write ends; once it exits the copies see EOF.
	for _, p := range pipes {
		_ = p.Close()
	}
	if err != nil {
		return fmt.Errorf("starting kubectl hpa run: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
		err = fmt.Errorf("kubectl hpa run ended: %w", err)
	case <-ctx.Done():
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err = <-done:
			if err != nil {
				err = fmt.Errorf("kubectl hpa run did not stop cleanly: %w", err)
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			err = errors.New("kubectl hpa run did not stop within 10s of SIGINT and was killed")
		}
	}
	copied.Wait()
	return err
}

// leaseState says whether run released its Lease: the cluster is still up, so this is what
// the next holder would find.
func leaseState(c *cluster.Cluster) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := c.Client().CoordinationV1().Leases(demoNamespace).Get(ctx, "kubectl-hpa", metav1.GetOptions{})
	switch {
	case err != nil:
		return fmt.Sprintf("could not read run's Lease: %v", err)
	case l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "":
		return fmt.Sprintf("run released its Lease %s/%s", demoNamespace, l.Name)
	default:
		return fmt.Sprintf("run's Lease %s/%s is still held by %s (it expires on its own)", demoNamespace, l.Name, *l.Spec.HolderIdentity)
	}
}

// sample creates the demo namespace: a Deployment of 2 pods requesting 200m CPU each and an
// HPA keeping them at 50% with a short scale-down window, so the demo moves within minutes.
func sample(ctx context.Context, c *cluster.Cluster) error {
	if err := c.EnsureNamespace(ctx, demoNamespace); err != nil {
		return err
	}
	replicas := int32(2)
	labels := map[string]string{"app": demoApp}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: demoApp, Namespace: demoNamespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "demo/web:1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}},
				}}},
			},
		},
	}
	if _, err := c.Client().AppsV1().Deployments(demoNamespace).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating deployment: %w", err)
	}
	minReplicas, util, window := int32(1), int32(50), int32(30)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: demoApp, Namespace: demoNamespace},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: demoApp},
			MinReplicas:    &minReplicas,
			MaxReplicas:    10,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &util},
			}}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window},
			},
		},
	}
	if _, err := c.Client().AutoscalingV2().HorizontalPodAutoscalers(demoNamespace).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating hpa: %w", err)
	}
	return nil
}

func driveLoad(ctx context.Context, c *cluster.Cluster, announce func(string, ...any)) {
	w := cluster.Workload{Namespace: demoNamespace, Selector: map[string]string{"app": demoApp}}
	for {
		for _, p := range cycle() {
			c.Load().Set(w, cluster.Load{CPUMilli: p.cpuMilli, MemoryBytes: 128 << 20})
			announce("load -> %s for %s", p.what, p.hold)
			select {
			case <-ctx.Done():
				return
			case <-time.After(p.hold):
			}
		}
	}
}

// progressEvery is how often a long wait says it goes on: a quarter of a minute of silence
// already reads as a hang.
const progressEvery = 14 * time.Second

// heartbeat says every every, until the returned stop is called or ctx is done, that the demo
// still waits for what, and for how long (with of: "of about 60").
func heartbeat(ctx context.Context, s streams, every time.Duration, what, of string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	t0 := time.Now()
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				s.say("  still waiting %s (%.0fs%s)", what, time.Since(t0).Seconds(), strings.TrimRight(" "+of, " "))
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

func waitForMetrics(ctx context.Context, k cluster.Kubectl, s streams) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	defer heartbeat(ctx, s, progressEvery, "for pod metrics", "")()
	for {
		if _, err := k.Run(ctx, "get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/"+demoNamespace+"/pods"); err == nil {
			if out, err := k.Run(ctx, "top", "pods", "-n", demoNamespace, "--no-headers"); err == nil && out != "" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no pod metrics from metrics-server: %w", ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}

// writeKubectlWrapper writes DIR/kubectl, which runs kubectl inside the cluster's network
// namespace with the admin kubeconfig and the demo's kubectl-hpa first on PATH. The
// kubeconfig is given in the environment, not as a flag: kubectl refuses flags before a
// plugin's name, so `DIR/kubectl hpa explain ...` works as well as `DIR/kubectl get ...`.
func writeKubectlWrapper(c *cluster.Cluster, pluginDir string) (string, error) {
	pid, err := cluster.HostPID()
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.Dir(), "kubectl")
	script := fmt.Sprintf(`#!/bin/sh
# kubectl for the kubectl-hpa demo cluster (it lives in the network namespace of pid %d).
export KUBECONFIG=%s
export KUBECACHEDIR=%s
export PATH=%s:"$PATH"
exec nsenter --net=/proc/%d/ns/net kubectl "$@"
`, pid, shellQuote(c.AdminKubeconfig()), shellQuote(filepath.Join(c.Dir(), "kube-cache")), shellQuote(pluginDir), pid)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return "", fmt.Errorf("writing kubectl wrapper: %w", err)
	}
	return path, nil
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

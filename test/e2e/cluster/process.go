package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	// logTailLines is how much of a component's log an error quotes.
	logTailLines = 25
	// stopGrace is how long a component may take to exit after SIGTERM before it is killed.
	stopGrace = 10 * time.Second
	// pollInterval paces every readiness probe.
	pollInterval = 100 * time.Millisecond
)

// process is one running component binary with its log file.
type process struct {
	name    string
	bin     string
	args    []string
	logPath string
	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{} // closed when the process has exited and been reaped
	waitErr error         // valid after done is closed
}

// awaitBinary waits up to wait for bin, a link to a binary hack/build-testbin.sh is still
// building, to lead to the binary, and returns how long it waited. A build that failed leaves
// a .failed file beside the directory it builds into; the wait ends at once then.
func awaitBinary(ctx context.Context, bin string, wait time.Duration) (time.Duration, error) {
	t0 := time.Now()
	target, err := os.Readlink(bin)
	if _, statErr := os.Stat(bin); statErr == nil || err != nil || wait <= 0 {
		return 0, nil // there, or not a link to a build: startProcess says what is missing
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(bin), target)
	}
	failed := filepath.Dir(target) + ".failed"
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if _, err := os.Stat(bin); err == nil {
			return time.Since(t0), nil
		}
		if msg, err := os.ReadFile(failed); err == nil {
			return time.Since(t0), fmt.Errorf("the build of %s failed: %s", target, strings.TrimSpace(string(msg)))
		}
		if time.Since(t0) > wait {
			return time.Since(t0), fmt.Errorf("%s was not built within %s (hack/build-testbin.sh builds it)", target, wait)
		}
		select {
		case <-ctx.Done():
			return time.Since(t0), fmt.Errorf("waiting for %s to be built: %w", target, ctx.Err())
		case <-tick.C:
		}
	}
}

// startWhenBuilt starts a component built alongside the tests (see awaitBinary) once its
// binary bin is there, saying how long the wait for its build and its start took.
func startWhenBuilt[T any](ctx context.Context, c *Cluster, name, bin string, start func() (T, error)) (T, error) {
	var zero T
	t0 := time.Now()
	if waited, err := awaitBinary(ctx, bin, c.cfg.BinWait); err != nil {
		return zero, fmt.Errorf("%s: %w", name, err)
	} else if waited > 0 {
		c.cfg.Progress("%-28s %6.2fs", name+" (its build)", waited.Seconds())
		t0 = time.Now()
	}
	v, err := start()
	if err != nil {
		return zero, err
	}
	c.cfg.Progress("%-28s %6.2fs", name, time.Since(t0).Seconds())
	return v, nil
}

// startProcess launches bin with args, output appended to logDir/name.log. The child gets
// SIGKILL if the harness dies, so a crashed test does not leak control-plane processes. It
// runs in a process group of its own, so a terminal's Ctrl-C reaches only the harness (or the
// demo), which stops the components in order: the API server outlives its clients' stops.
func startProcess(name, bin string, args []string, logDir string) (*process, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s: binary not found (%w); build it with hack/build-testbin.sh", name, err)
	}
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: opening log: %w", name, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%s: starting %s: %w", name, bin, err)
	}
	p := &process{name: name, bin: bin, args: args, logPath: logPath, cmd: cmd, logFile: f, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *process) Pid() int { return p.cmd.Process.Pid }

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitReady polls probe until it succeeds, the process exits, or timeout passes; every
// failure names the component and quotes the end of its log.
func (p *process) waitReady(ctx context.Context, timeout time.Duration, probe func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if p.exited() {
			//nolint:errorlint // waitErr is nil after a clean exit, which %w would print as %!w(<nil>)
			return fmt.Errorf("%s exited during start (%v); last lines of %s:\n%s", p.name, p.waitErr, p.logPath, tail(p.logPath, logTailLines))
		}
		if last = probe(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s (last probe: %w); last lines of %s:\n%s", p.name, timeout, last, p.logPath, tail(p.logPath, logTailLines))
		case <-p.done:
		case <-time.After(pollInterval):
		}
	}
}

// stop sends SIGTERM, waits up to stopGrace, then SIGKILLs; it returns once the process is
// reaped, and whether it had to be killed (a clean stop is preferred, a kill is no failure: the
// API server, for one, may wait on open watches).
func (p *process) stop() (killed bool) { return p.stopWithin(stopGrace) }

// stopWithin is stop with another grace period.
func (p *process) stopWithin(grace time.Duration) (killed bool) {
	if p.exited() {
		return false
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return false
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return true
}

// tail returns the last n lines of a file, or a note why it cannot.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// checkPortFree fails, naming the component, when addr is already bound: the component would
// otherwise die with a log line that is easy to miss.
func checkPortFree(component, addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) && errno == syscall.EADDRINUSE {
			return fmt.Errorf("%s: port %s is already in use; stop whatever listens there or choose another port in cluster.Config", component, addr)
		}
		return fmt.Errorf("%s: cannot listen on %s: %w", component, addr, err)
	}
	return l.Close()
}

//go:build e2e && soak

package e2e

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// The soak's reference: after run, kube-controller-manager's own HPA controller decides the
// same HPAs on the same cluster, and both are measured the same way, side by side.
var (
	soakReference = flag.Duration("soak.reference", 5*time.Minute, "after run, kube-controller-manager's HPA controller (15 s period, 5 workers) over the same HPAs for this long, measured as run is (0: no reference)")
	soakBaseline  = flag.Duration("soak.baseline", time.Minute, "before run starts, how long metrics-server and kube-controller-manager (without its HPA controller) are measured with no HPA controller running: what they cost anyway")
)

// kcmHPAAgent ends the user agent of kube-controller-manager's HPA controller's clients (the
// controller manager names each controller's client after it).
const kcmHPAAgent = "/horizontal-pod-autoscaler"

// userHZ is the unit of /proc/<pid>/stat's CPU times: USER_HZ, 100 on every Linux ABI Go runs on.
const userHZ = 100

// soakProc is what the side by side needs from /proc for one process at one moment.
type soakProc struct {
	at    time.Time
	cpu   time.Duration // user and system time
	rchar int64         // bytes the process read through read(2) and its kin, sockets included
	rss   int64
}

func soakReadProc(pid int) (soakProc, error) {
	p := soakProc{at: time.Now()}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return p, err
	}
	// The command may hold spaces and parentheses: the fields start after the last ')'.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(f) < 13 {
		return p, fmt.Errorf("/proc/%d/stat: %d fields after the command", pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] { // utime, stime
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return p, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += v
	}
	p.cpu = time.Duration(ticks) * time.Second / userHZ
	io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return p, err
	}
	for _, line := range strings.Split(string(io), "\n") {
		if rest, ok := strings.CutPrefix(line, "rchar:"); ok {
			if p.rchar, err = strconv.ParseInt(strings.TrimSpace(rest), 10, 64); err != nil {
				return p, fmt.Errorf("/proc/%d/io: %w", pid, err)
			}
		}
	}
	p.rss, err = soakReadRSS(pid)
	return p, err
}

func soakProcOf(t *testing.T, pid int) soakProc {
	t.Helper()
	p, err := soakReadProc(pid)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// soakUse is what a process spent between two readings.
type soakUse struct {
	wall  time.Duration
	cpu   time.Duration
	bytes int64
}

func (a soakProc) to(b soakProc) soakUse {
	return soakUse{wall: b.at.Sub(a.at), cpu: b.cpu - a.cpu, bytes: b.rchar - a.rchar}
}

// over is the share of this use a window of d stands for.
func (u soakUse) over(d time.Duration) (cpu time.Duration, bytes float64) {
	if u.wall <= 0 {
		return 0, 0
	}
	r := float64(d) / float64(u.wall)
	return time.Duration(float64(u.cpu) * r), float64(u.bytes) * r
}

// soakHostPIDOf is the host's pid of a cluster component, failing the test when it is not running.
func soakHostPIDOf(t *testing.T, name string, nsPID int) int {
	t.Helper()
	if nsPID == 0 {
		t.Fatalf("%s is not running", name)
	}
	pid, err := soakHostPID(nsPID)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// soakBaselineUse is what metrics-server and kube-controller-manager (without its HPA
// controller) cost with no HPA controller running: metrics-server scrapes the node anyway.
type soakBaselineUse struct {
	metricsServer, kcm soakUse
	kcmRSS             int64
}

func soakMeasureBaseline(t *testing.T, d time.Duration) soakBaselineUse {
	t.Helper()
	ms := soakHostPIDOf(t, "metrics-server", shared.MetricsServerPid())
	kcm := soakHostPIDOf(t, "kube-controller-manager", shared.ControllerManagerPid())
	ms1, kcm1 := soakProcOf(t, ms), soakProcOf(t, kcm)
	time.Sleep(d)
	kcm2 := soakProcOf(t, kcm)
	return soakBaselineUse{metricsServer: ms1.to(soakProcOf(t, ms)), kcm: kcm1.to(kcm2), kcmRSS: kcm2.rss}
}

// soakController is one HPA controller's figures over its steady window.
type soakController struct {
	name                string
	hpas, workers       int
	window              time.Duration
	initialPass         time.Duration
	reconciles, busy    float64 // reconciles in the window and the seconds they took
	perKind             map[string]int
	self, metricsServer soakUse
	// selfBase is the controller's own cost without its HPA work (kube-controller-manager runs
	// its other controllers anyway), zero for run.
	selfBase          soakUse
	rss, rssBase      int64
	metricsServerIdle soakUse
}

func (c soakController) passes() float64 { return c.reconciles / float64(c.hpas) }

// passBusy is a full pass's worker time spread over the workers: how long a pass takes when
// every HPA is due at once.
func (c soakController) passBusy() time.Duration {
	if c.reconciles == 0 {
		return 0
	}
	return time.Duration(c.busy / c.reconciles * float64(c.hpas) / float64(c.workers) * float64(time.Second))
}

// hpaRequests are the requests made for HPAs: everything but the Lease, informers and discovery.
func (c soakController) hpaRequests() int {
	n := 0
	for k, v := range c.perKind {
		if !soakPerProcess(k) {
			n += v
		}
	}
	return n
}

// soakBeyond is what a process spent in the window beyond its baseline's rate.
func soakBeyond(u, base soakUse) (time.Duration, float64) {
	cpu, bytes := base.over(u.wall)
	return u.cpu - cpu, float64(u.bytes) - bytes
}

func (c soakController) metricsServerCPUPerPass() time.Duration {
	cpu, _ := soakBeyond(c.metricsServer, c.metricsServerIdle)
	return time.Duration(float64(cpu) / c.passes())
}

func (c soakController) perPass() (cpu time.Duration, bytes float64) {
	cpu, bytes = soakBeyond(c.self, c.selfBase)
	return time.Duration(float64(cpu) / c.passes()), bytes / c.passes()
}

// soakKCM is kube-controller-manager's HPA controller with its /metrics served on 127.0.0.1.
type soakKCM struct {
	metrics string
	client  *http.Client
}

// soakStartReference restarts kube-controller-manager with its HPA controller at upstream's
// defaults (15 s period, 5 workers) and its metrics endpoint, and restarts it without the
// controller when the test ends.
func soakStartReference(t *testing.T) *soakKCM {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ctx := context.Background()
	if err := shared.RestartControllerManagerWith(ctx, true, "--horizontal-pod-autoscaler-sync-period=15s",
		"--concurrent-horizontal-pod-autoscaler-syncs="+strconv.Itoa(soakWorkers),
		"--secure-port="+strconv.Itoa(port), "--bind-address=127.0.0.1", "--cert-dir="+t.TempDir(),
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := shared.RestartControllerManager(context.Background(), false); err != nil {
			t.Errorf("restarting kube-controller-manager without its HPA controller: %v", err)
		}
	})
	return &soakKCM{
		metrics: fmt.Sprintf("https://127.0.0.1:%d/metrics", port),
		// Its serving certificate is self-signed: nothing secret crosses this loopback read.
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}, //nolint:gosec // see above
	}
}

// soakRunReference measures kube-controller-manager's HPA controller over the n HPAs for d once
// its first pass has read every HPA's metrics.
func soakRunReference(t *testing.T, n int, d time.Duration, base soakBaselineUse) soakController {
	t.Helper()
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	kcm := soakStartReference(t)
	pid := soakHostPIDOf(t, "kube-controller-manager", shared.ControllerManagerPid())
	ms := soakHostPIDOf(t, "metrics-server", shared.MetricsServerPid())
	c := soakController{name: "kube-controller-manager", hpas: n, workers: soakWorkers, metricsServerIdle: base.metricsServer, selfBase: base.kcm, rssBase: base.kcmRSS}

	var first time.Time
	eventually(t, 30*time.Minute, fmt.Sprintf("kube-controller-manager has read the metrics of all %d HPAs", n), func(context.Context) error {
		reqs, err := shared.AuditSince(mark, cluster.AuditFilter{})
		if err != nil {
			return err
		}
		done := map[string]time.Time{}
		for _, r := range soakKCMRequests(reqs) {
			if soakKind(r) == "metrics read" && !r.Completed.IsZero() {
				if first.IsZero() {
					first = r.Received
				}
				if _, ok := done[r.Namespace+"/"+soakSelector(r)]; !ok {
					done[r.Namespace+"/"+soakSelector(r)] = r.Completed
				}
			}
		}
		if len(done) < n {
			time.Sleep(2 * time.Second)
			return fmt.Errorf("%d/%d HPAs' metrics read", len(done), n)
		}
		var last time.Time
		for _, at := range done {
			if at.After(last) {
				last = at
			}
		}
		c.initialPass = last.Sub(first)
		return nil
	})

	m1, p1, ms1 := soakScrapeURL(t, kcm.client, kcm.metrics), soakProcOf(t, pid), soakProcOf(t, ms)
	time.Sleep(d)
	m2, p2, ms2 := soakScrapeURL(t, kcm.client, kcm.metrics), soakProcOf(t, pid), soakProcOf(t, ms)
	c.window, c.reconciles, c.busy = m2.at.Sub(m1.at), m2.reconciles-m1.reconciles, m2.reconcileSecs-m1.reconcileSecs
	c.self, c.metricsServer, c.rss = p1.to(p2), ms1.to(ms2), p2.rss
	reqs, err := shared.AuditSince(mark, cluster.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	c.perKind = map[string]int{}
	for _, r := range soakKCMRequests(reqs) {
		if !r.Received.Before(m1.at) && r.Received.Before(m2.at) {
			c.perKind[soakKind(r)]++
		}
	}
	if c.reconciles == 0 {
		t.Errorf("kube-controller-manager reconciled no HPA in %s", c.window)
	}
	return c
}

// soakKCMRequests keeps the requests of kube-controller-manager's HPA controller.
func soakKCMRequests(reqs []cluster.AuditRequest) []cluster.AuditRequest {
	var out []cluster.AuditRequest
	for _, r := range reqs {
		if strings.HasSuffix(r.UserAgent, kcmHPAAgent) {
			out = append(out, r)
		}
	}
	return out
}

// soakSideBySide prints run's figures and the reference's, when there is one, in columns.
func soakSideBySide(cs ...soakController) string {
	var s strings.Builder
	row := func(what string, f func(c soakController) string) {
		fmt.Fprintf(&s, "  %-62s", what)
		for _, c := range cs {
			fmt.Fprintf(&s, " %-26s", f(c))
		}
		s.WriteString("\n")
	}
	mib := func(v int64) string { return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20)) }
	fmt.Fprintf(&s, "SIDE BY SIDE: %d HPAs, the same cluster and objects, one controller after the other\n", cs[0].hpas)
	row("", func(c soakController) string { return c.name })
	row("steady window", func(c soakController) string { return c.window.Round(time.Second).String() })
	row("first pass (first metrics read to the last HPA's)", func(c soakController) string { return c.initialPass.Round(time.Millisecond).String() })
	row("full pass, steady (mean reconcile x HPAs / workers)", func(c soakController) string { return c.passBusy().Round(time.Millisecond).String() })
	row("mean reconcile", func(c soakController) string {
		return time.Duration(c.busy / c.reconciles * float64(time.Second)).Round(time.Microsecond).String()
	})
	row("passes in the window", func(c soakController) string { return fmt.Sprintf("%.1f", c.passes()) })
	row("API requests per HPA per sync", func(c soakController) string {
		return fmt.Sprintf("%.3f", float64(c.hpaRequests())/c.reconciles)
	})
	row("metrics reads per pass", func(c soakController) string {
		return fmt.Sprintf("%.1f", float64(c.perKind["metrics read"])/c.passes())
	})
	row("metrics-server CPU per pass (beyond its idle rate)", func(c soakController) string {
		return c.metricsServerCPUPerPass().Round(time.Millisecond).String()
	})
	row("controller CPU per pass (beyond its other controllers)", func(c soakController) string {
		cpu, _ := c.perPass()
		return cpu.Round(time.Millisecond).String()
	})
	row("controller bytes read per pass (beyond the same)", func(c soakController) string {
		_, b := c.perPass()
		return fmt.Sprintf("%.2f MiB", b/(1<<20))
	})
	row("controller RSS at the window's end (without its HPA work)", func(c soakController) string {
		if c.rssBase == 0 {
			return mib(c.rss)
		}
		return fmt.Sprintf("%s (%s)", mib(c.rss), mib(c.rssBase))
	})
	for _, c := range cs {
		var kinds []string
		for k, v := range c.perKind {
			if !soakPerProcess(k) {
				kinds = append(kinds, fmt.Sprintf("%s %.1f", k, float64(v)/c.passes()))
			}
		}
		slices.Sort(kinds)
		fmt.Fprintf(&s, "  %s's requests per pass: %s\n", c.name, strings.Join(kinds, ", "))
	}
	return s.String()
}

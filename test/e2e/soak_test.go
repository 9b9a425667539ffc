//go:build e2e && soak

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// The soak test is behind its own build tag (make soak): it measures, it does not gate CI.
var (
	soakHPAs     = flag.Int("soak.hpas", 1000, "HPAs, each on its own Deployment")
	soakPods     = flag.Int("soak.pods", 10000, "pods in total, split evenly across the Deployments")
	soakDuration = flag.Duration("soak.duration", 10*time.Minute, "steady state measured after every HPA has been reconciled once")
	soakRSSEvery = flag.Duration("soak.rss-every", 30*time.Second, "how often the RSS of run is sampled")
	soakReads    = flag.String("soak.metrics-reads", "per-namespace", "run's --metrics-reads: per-namespace (one PodMetrics list per namespace shared by the HPAs synced within a second) or per-hpa (upstream's read per HPA and sync)")
	soakNSs      = flag.Int("soak.namespaces", 50, "namespaces the HPAs are spread over, evenly")
	soakRate     = flag.Float64("soak.churn-rate", 5, "TestSoakChurnAndFaults's changes per second: HPAs created, edited (target, behavior) and deleted, Deployments scaled by hand")
	soakQPS      = flag.Int("soak.kube-api-qps", 0, "TestSoakChurnAndFaults's run --kube-api-qps, with a burst twice as large (run's defaults when 0)")
	soakChurnWkr = flag.Int("soak.churn-workers", soakWorkers, "TestSoakChurnAndFaults's run --workers")
	soakProfiles = flag.String("soak.profiles", os.TempDir(), "directory that keeps run's heap profile at the end of the steady state (run --profiling)")
)

const (
	soakUser    = "soak:kubectl-hpa-run"
	soakWorkers = 5
	// soakPodMilli is every pod's steady usage: exactly the HPAs' 50% target of a 100m request,
	// which the load model makes exact, so a steady HPA has nothing to write.
	soakPodMilli = 50
	// soakHighMilli is the per-pod usage after the load change: 500% of the request asks for 10x
	// the pods, so the one expected write goes straight to maxReplicas (2x the pods, which the
	// default scale-up policies allow in one step).
	soakHighMilli = 500
)

// TestSoak runs `kubectl hpa run -A` over soak.hpas HPAs and soak.pods pods spread evenly over
// soak.namespaces namespaces for soak.duration and reports what it costs: sync pass time, API
// requests per HPA and sync, RSS and its growth, time from a metric change to the scale write.
// It asserts only correctness: every HPA is reconciled, a steady sync costs one metrics read
// (per-hpa) or shares its namespace's (per-namespace) and writes only what changed, and the
// load change leads to the scale write the upstream rules give.
func TestSoak(t *testing.T) {
	n, total := *soakHPAs, *soakPods
	if n < 2 || total%n != 0 || n < *soakNSs {
		t.Fatalf("-soak.pods=%d must be a multiple of -soak.hpas=%d (at least 2 and at least -soak.namespaces=%d)", total, n, *soakNSs)
	}
	perDep := int32(total / n)
	ctx := context.Background()
	cs := shared.Client()
	fig := &soakFigures{hpas: n, pods: total, namespaces: *soakNSs, loadStart: soakLoadavg()}

	// The Lease's namespace names the run: its HPAs carry it as soakLabel.
	leaseNS := namespace(t, "soak-lease")
	var nss []string
	for range *soakNSs {
		nss = append(nss, namespace(t, "soak"))
	}
	nsOf := func(i int) string { return nss[i%len(nss)] }
	t0 := time.Now()
	soakCreateWorkloads(t, nss, n, perDep)
	fig.podsReady = time.Since(t0)
	t.Logf("%d pods ready after %s", total, fig.podsReady.Round(time.Second))
	churnWaitSamples(t, nss, total)

	for i := range n {
		h := hpaSpec{max: 2 * perDep}.build(nsOf(i))
		h.Name, h.Spec.ScaleTargetRef.Name = soakName(i), soakName(i)
		h.Labels = map[string]string{soakLabel: leaseNS}
		if _, err := cs.AutoscalingV2().HorizontalPodAutoscalers(nsOf(i)).Create(ctx, h, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	base := soakMeasureBaseline(t, *soakBaseline)
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	run := soakStartRun(t, leaseNS)
	fig.runStarted = time.Now()
	sampler := soakSampleRSS(run.pid)

	soakWaitAllReconciled(t, leaseNS, n, perDep)
	fig.allReconciled = time.Now()

	// Steady state: from here every HPA has its status; nothing should change but HPA 0's load.
	watcher := soakWatchHPAs(t, leaseNS)
	ssStart := time.Now()
	msPID := soakHostPIDOf(t, "metrics-server", shared.MetricsServerPid())
	m1, p1, ms1 := run.scrape(t), soakProcOf(t, run.pid), soakProcOf(t, msPID)
	rss1 := p1.rss

	time.Sleep(*soakDuration / 2)
	changed, changedNS := soakName(0), nsOf(0)
	setAt, sampleAt := soakChangeLoad(t, changedNS, changed, perDep)
	eventually(t, max(*soakDuration, 15*time.Minute), fmt.Sprintf("%s scaled to %d", changed, 2*perDep), func(ctx context.Context) error {
		s, err := cs.AppsV1().Deployments(changedNS).GetScale(ctx, changed, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s.Spec.Replicas != 2*perDep {
			return fmt.Errorf("spec.replicas %d", s.Spec.Replicas)
		}
		return nil
	})
	if rest := *soakDuration - time.Since(ssStart); rest > 0 {
		time.Sleep(rest)
	}
	ssEnd := time.Now()
	m2, p2, ms2 := run.scrape(t), soakProcOf(t, run.pid), soakProcOf(t, msPID)
	rss2 := p2.rss
	run.heapProfile(t)
	modified := watcher.stop()
	fig.rss = sampler.stop()
	run.stop(t)
	fig.loadEnd = soakLoadavg()

	reqs, err := shared.AuditSince(mark, cluster.AuditFilter{User: soakUser})
	if err != nil {
		t.Fatal(err)
	}
	fig.initialPass(t, reqs, n)
	fig.steady(t, reqs, ssStart, ssEnd, m1, m2, modified, changed)
	fig.scaleLatency(t, reqs, changed, setAt, sampleAt)
	fig.rssStart, fig.rssEnd, fig.heapStart, fig.heapEnd, fig.steadyFor = rss1, rss2, m1.heapBytes, m2.heapBytes, ssEnd.Sub(ssStart)
	fig.decisions = run.decisions(t)

	hpa, err := cs.AutoscalingV2().HorizontalPodAutoscalers(changedNS).Get(ctx, changed, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hpa.Status.DesiredReplicas != 2*perDep {
		t.Errorf("HPA %s desiredReplicas %d after the load change, want %d", changed, hpa.Status.DesiredReplicas, 2*perDep)
	}
	t.Log(fig.String())

	ours := soakController{name: "run", hpas: n, workers: soakWorkers, window: m2.at.Sub(m1.at), initialPass: fig.passInitial,
		reconciles: m2.reconciles - m1.reconciles, busy: m2.reconcileSecs - m1.reconcileSecs, perKind: fig.perKind,
		self: p1.to(p2), metricsServer: ms1.to(ms2), rss: p2.rss, metricsServerIdle: base.metricsServer}
	if *soakReference <= 0 {
		t.Log(soakSideBySide(ours))
		return
	}
	t.Log(soakSideBySide(ours, soakRunReference(t, n, *soakReference, base)))
}

func soakName(i int) string { return fmt.Sprintf("soak-%04d", i) }

// soakLabel marks the HPAs of one TestSoak, which its run -A selects.
const soakLabel = "e2e.kubectl-hpa.io/soak"

// soakCreateWorkloads creates n Deployments of perDep pods, each pod at soakPodMilli, round-robin
// over the namespaces, and waits until every pod is ready.
func soakCreateWorkloads(t *testing.T, nss []string, n int, perDep int32) {
	t.Helper()
	cs := shared.Client()
	names := make(chan int)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range names {
				ns := nss[i%len(nss)]
				d := deploymentSpec{name: soakName(i), replicas: perDep}
				sel := map[string]string{"app": d.name}
				shared.Load().Set(cluster.Workload{Namespace: ns, Selector: sel},
					cluster.Load{CPUMilli: int64(perDep) * soakPodMilli, MemoryBytes: int64(perDep) * 64 << 20})
				if _, err := cs.AppsV1().Deployments(ns).Create(context.Background(), d.build(ns), metav1.CreateOptions{}); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		names <- i
	}
	close(names)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ours := map[string]bool{}
	for _, ns := range nss {
		ours[ns] = true
	}
	soakWaitReady(t, metav1.NamespaceAll, ours, int32(n)*perDep, perDep)
}

// soakWaitReady waits until the Deployments of the namespaces in ours (listed in namespace,
// metav1.NamespaceAll for every one) have want ready pods, counting at most perDep each, and
// logs the progress every 30 s.
func soakWaitReady(t *testing.T, namespace string, ours map[string]bool, want, perDep int32) {
	t.Helper()
	last := time.Now()
	eventually(t, 45*time.Minute, fmt.Sprintf("%d pods ready", want), func(ctx context.Context) error {
		list, err := shared.Client().AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var ready int32
		for _, d := range list.Items {
			if ours[d.Namespace] {
				ready += min(d.Status.ReadyReplicas, perDep)
			}
		}
		if ready != want {
			if time.Since(last) > 30*time.Second {
				t.Logf("%d/%d pods ready (load %s)", ready, want, soakLoadavg())
				last = time.Now()
			}
			time.Sleep(2 * time.Second)
			return fmt.Errorf("%d/%d pods ready", ready, want)
		}
		return nil
	})
}

// soakWaitAllReconciled waits until run has written the steady status of every HPA labelled
// with soakLabel=label: its Deployment's size, decided at the pods' utilization, written by
// run alone. A status from a failed sync (metrics-server without the samples of a namespace
// for a resolution, as when its scrape of the loaded node stand-in times out) is not the end
// of the wait: run corrects it at the HPA's next sync, as upstream's controller would.
func soakWaitAllReconciled(t *testing.T, label string, n int, perDep int32) {
	t.Helper()
	eventually(t, 45*time.Minute, fmt.Sprintf("run has written the steady status of all %d HPAs", n), func(ctx context.Context) error {
		list, err := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: soakLabel + "=" + label})
		if err != nil {
			return err
		}
		var unwritten, other []string
		for _, h := range list.Items {
			switch {
			case len(h.Status.CurrentMetrics) == 0:
				unwritten = append(unwritten, h.Name)
			case !soakSteadyStatus(h, perDep):
				other = append(other, soakStatusString(h))
			}
		}
		if len(list.Items) != n || len(unwritten)+len(other) > 0 {
			time.Sleep(2 * time.Second)
			return fmt.Errorf("%d HPAs of %d listed; %d without a status, %d with another (first: %v)",
				len(list.Items), n, len(unwritten), len(other), other[:min(len(other), 3)])
		}
		return nil
	})
}

// soakSteadyStatus reports whether h's status is the steady state's: perDep replicas at
// soakPodMilli % utilization, the status written by run alone.
func soakSteadyStatus(h autoscalingv2.HorizontalPodAutoscaler, perDep int32) bool {
	if len(h.Status.CurrentMetrics) == 0 || !slices.Equal(soakStatusManagers(h), []string{"kubectl-hpa"}) {
		return false
	}
	cur := h.Status.CurrentMetrics[0].Resource
	return h.Status.DesiredReplicas == perDep && cur != nil && cur.Current.AverageUtilization != nil && *cur.Current.AverageUtilization == soakPodMilli
}

// soakStatusManagers are the field managers of h's status.
func soakStatusManagers(h autoscalingv2.HorizontalPodAutoscaler) []string {
	var managers []string
	for _, f := range h.ManagedFields {
		if f.Subresource == "status" {
			managers = append(managers, f.Manager)
		}
	}
	return managers
}

// soakStatusString says what h's status holds, for a failure.
func soakStatusString(h autoscalingv2.HorizontalPodAutoscaler) string {
	var cur *autoscalingv2.ResourceMetricStatus
	if len(h.Status.CurrentMetrics) > 0 {
		cur = h.Status.CurrentMetrics[0].Resource
	}
	return fmt.Sprintf("%s: desired %d, status written by %v, current %+v", h.Name, h.Status.DesiredReplicas, soakStatusManagers(h), cur)
}

// soakChangeLoad raises the load of one workload right after metrics-server scraped its node,
// so the next sample covers only the new load. It returns when the load changed and the time
// of metrics-server's first sample that covers it.
func soakChangeLoad(t *testing.T, ns, name string, perDep int32) (setAt, sampleAt time.Time) {
	t.Helper()
	pods := podsOf(t, ns, map[string]string{"app": name})
	if len(pods) == 0 {
		t.Fatalf("no pods of %s", name)
	}
	node := pods[0].Spec.NodeName
	load := shared.Load()
	waitNext := func(after time.Time) time.Time {
		var at time.Time
		eventually(t, time.Minute, "metrics-server scrapes "+node, func(context.Context) error {
			if at = load.LastScrape(node); !at.After(after) {
				time.Sleep(5 * time.Millisecond)
				return fmt.Errorf("last scrape %s", at)
			}
			return nil
		})
		return at
	}
	waitNext(load.LastScrape(node))
	load.Set(cluster.Workload{Namespace: ns, Selector: map[string]string{"app": name}},
		cluster.Load{CPUMilli: int64(perDep) * soakHighMilli, MemoryBytes: int64(perDep) * 64 << 20})
	setAt = time.Now()
	return setAt, waitNext(setAt)
}

// soakRun is `kubectl hpa run` with its output in files and its /metrics endpoint.
type soakRun struct {
	cmd *exec.Cmd
	// pid is the host's id of the process (/proc is the host's).
	pid int
	out string
	// endpoint serves run's /metrics and /debug/pprof/.
	endpoint string
	done     chan error
}

// heapProfile keeps run's heap profile (after a collection) in soak.profiles and logs its
// largest holders of live memory, so that an RSS over its target says what holds it.
func (r *soakRun) heapProfile(t *testing.T) {
	t.Helper()
	resp, err := http.Get(r.endpoint + "/debug/pprof/heap?gc=1")
	if err != nil {
		t.Errorf("heap profile: %v", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("heap profile: %s", resp.Status)
		return
	}
	path := filepath.Join(*soakProfiles, fmt.Sprintf("soak-heap-%s.pb.gz", time.Now().Format("20060102-150405")))
	f, err := os.Create(path)
	if err != nil {
		t.Errorf("heap profile: %v", err)
		return
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		t.Errorf("heap profile: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("heap profile: %v", err)
	}
	top, err := exec.Command("go", "tool", "pprof", "-top", "-sample_index=inuse_space", "-nodecount=30", path).CombinedOutput()
	if err != nil {
		t.Logf("go tool pprof %s: %v", path, err)
	}
	t.Logf("run's heap in use at the end of the steady state (%s):\n%s", path, top)
}

// soakStartRun starts run -A on the HPAs labelled soakLabel=leaseNS, with its Lease in leaseNS.
func soakStartRun(t *testing.T, leaseNS string) *soakRun {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	r := &soakRun{out: filepath.Join(dir, "run.out"), endpoint: "http://" + addr, done: make(chan error, 1)}
	stdout, err := os.Create(r.out)
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(filepath.Join(dir, "run.err"))
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = pluginAs(t, soakUser).Command(context.Background(), "hpa", "run", "-A", "-l", soakLabel+"="+leaseNS, "--leader-elect-lease-namespace="+leaseNS,
		"--workers="+strconv.Itoa(soakWorkers), "--metrics-bind-address="+addr, "--profiling", "--metrics-reads="+*soakReads)
	r.cmd.Stdout, r.cmd.Stderr = stdout, stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.done <- r.cmd.Wait()
		stdout.Close()
		stderr.Close()
	}()
	t.Cleanup(func() {
		r.stop(t)
		if t.Failed() {
			errOut, _ := os.ReadFile(stderr.Name())
			t.Logf("kubectl hpa run stderr (last 4 KiB):\n%s", errOut[max(0, len(errOut)-4096):])
		}
	})
	// kubectl execs the plugin in its own process, so the pid becomes kubectl-hpa's.
	eventually(t, time.Minute, "kubectl has exec'd kubectl-hpa", func(context.Context) error {
		var err error
		if r.pid, err = soakHostPID(r.cmd.Process.Pid); err != nil {
			return err
		}
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", r.pid))
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(comm)) != "kubectl-hpa" {
			return fmt.Errorf("process %d is %q", r.pid, comm)
		}
		return nil
	})
	return r
}

// soakHostPID finds the host's id of a process of this PID namespace: /proc is the host's
// mount (see cluster.HostPID), and its status lists a process's ids from the host's namespace
// down to its own (NSpid).
func soakHostPID(nsPID int) (int, error) {
	own, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return 0, err
	}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid)); err != nil || ns != own {
			continue
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
				ids := strings.Fields(rest)
				if len(ids) > 0 && ids[len(ids)-1] == strconv.Itoa(nsPID) {
					return pid, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("no process %d of this PID namespace in /proc", nsPID)
}

// stop interrupts run (as Ctrl-C does) and waits for it.
func (r *soakRun) stop(t *testing.T) {
	if r.cmd.ProcessState != nil {
		return
	}
	_ = r.cmd.Process.Signal(os.Interrupt)
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
		t.Errorf("kubectl hpa run did not exit within 30s of SIGINT")
	}
}

func (r *soakRun) decisions(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(r.out)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// soakScrape is what the figures need from run's /metrics.
type soakScrape struct {
	at                        time.Time
	reconciles, reconcileSecs float64
	heapBytes                 float64
}

func (r *soakRun) scrape(t *testing.T) soakScrape {
	t.Helper()
	return soakScrapeURL(t, http.DefaultClient, r.endpoint+"/metrics")
}

// soakScrapeURL reads the figures from an HPA controller's /metrics: run's and
// kube-controller-manager's name them alike.
func soakScrapeURL(t *testing.T, client *http.Client, endpoint string) soakScrape {
	t.Helper()
	resp, err := client.Get(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	s := soakScrape{at: time.Now()}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		name, _, _ := strings.Cut(line, " ")
		name, _, _ = strings.Cut(name, "{")
		value := func() float64 {
			v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
			if err != nil {
				t.Fatalf("parsing %q: %v", line, err)
			}
			return v
		}
		switch name {
		case "horizontal_pod_autoscaler_controller_reconciliation_duration_seconds_count":
			s.reconciles += value()
		case "horizontal_pod_autoscaler_controller_reconciliation_duration_seconds_sum":
			s.reconcileSecs += value()
		case "go_memstats_heap_inuse_bytes":
			s.heapBytes = value()
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

// soakReadRSS reads a process's resident set size in bytes.
func soakReadRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parsing %q: %w", line, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

type soakRSSSample struct {
	at  time.Time
	rss int64
}

type soakSampler struct {
	stopCh chan struct{}
	done   chan []soakRSSSample
}

func soakSampleRSS(pid int) *soakSampler {
	s := &soakSampler{stopCh: make(chan struct{}), done: make(chan []soakRSSSample, 1)}
	go func() {
		var out []soakRSSSample
		tick := time.NewTicker(*soakRSSEvery)
		defer tick.Stop()
		for {
			if rss, err := soakReadRSS(pid); err == nil {
				out = append(out, soakRSSSample{time.Now(), rss})
			}
			select {
			case <-s.stopCh:
				s.done <- out
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *soakSampler) stop() []soakRSSSample {
	close(s.stopCh)
	return <-s.done
}

// soakWatcher counts, per HPA, the changes the API server made to it (status writes that
// changed nothing do not show up here).
type soakWatcher struct {
	cancel context.CancelFunc
	done   chan map[string]int
}

func soakWatchHPAs(t *testing.T, label string) *soakWatcher {
	t.Helper()
	cs := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(metav1.NamespaceAll)
	sel := soakLabel + "=" + label
	list, err := cs.List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &soakWatcher{cancel: cancel, done: make(chan map[string]int, 1)}
	go func() {
		counts := map[string]int{}
		rv := list.ResourceVersion
		defer func() { w.done <- counts }()
		for ctx.Err() == nil {
			wi, err := cs.Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				time.Sleep(time.Second)
				continue
			}
			for ev := range wi.ResultChan() {
				h, ok := ev.Object.(*autoscalingv2.HorizontalPodAutoscaler)
				if !ok {
					continue
				}
				rv = h.ResourceVersion
				if ev.Type == watch.Modified {
					counts[h.Name]++
				}
			}
			wi.Stop()
		}
	}()
	return w
}

// stop ends the watch a few seconds from now, so the events of the last writes arrive.
func (w *soakWatcher) stop() map[string]int {
	time.Sleep(5 * time.Second)
	w.cancel()
	return <-w.done
}

func soakLoadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// soakKind classifies one request of run.
func soakKind(r cluster.AuditRequest) string {
	switch {
	case r.APIGroup == "metrics.k8s.io" && r.Resource == "pods" && (r.Verb == "list" || r.Verb == "get"):
		return "metrics read"
	case r.Resource == "leases":
		return "lease"
	case r.Resource == "":
		// API discovery, for the scale client's REST mapping: per process, not per HPA.
		return "discovery"
	case r.Verb == "watch" || (r.Verb == "list" && r.Name == ""):
		// Informers list once and re-watch when the server closes a watch: per process, not per HPA.
		return "informer list/watch"
	case r.Resource == "horizontalpodautoscalers" && r.Subresource == "status" && r.Verb == "update":
		return "status write"
	case r.Resource == "deployments" && r.Subresource == "scale" && (r.Verb == "update" || r.Verb == "patch"):
		return "scale write"
	case r.Resource == "deployments" && r.Subresource == "scale" && r.Verb == "get":
		// A scale write reads the scale it updates.
		return "scale read"
	case r.Resource == "events" && (r.Verb == "create" || r.Verb == "patch"):
		return "event"
	}
	return "other"
}

// soakPerProcess reports whether requests of kind are the process's own (its Lease, informers
// and discovery) rather than made for its HPAs.
func soakPerProcess(kind string) bool {
	return kind == "lease" || kind == "informer list/watch" || kind == "discovery"
}

// soakSelector is the label selector of a metrics read (one HPA's pods).
func soakSelector(r cluster.AuditRequest) string {
	u, err := url.Parse(r.RequestURI)
	if err != nil {
		return ""
	}
	return u.Query().Get("labelSelector")
}

type soakFigures struct {
	hpas, pods, namespaces                    int
	loadStart, loadEnd                        string
	podsReady                                 time.Duration
	runStarted, allReconciled                 time.Time
	firstRead                                 time.Time
	passInitial                               time.Duration
	steadyFor                                 time.Duration
	perKind                                   map[string]int
	reconcileCount, readCount                 float64
	meanReconcile                             time.Duration
	syncPeriods                               []time.Duration
	statusWrites, changes                     int
	rss                                       []soakRSSSample
	rssStart, rssEnd                          int64
	heapStart, heapEnd                        float64
	toWrite, fromSample                       time.Duration
	decisions                                 int
	reqsPerSync, reqsPerSyncAll, readsPerSync float64
	passFromThroughput, passFromBusy          time.Duration
	readsPerPass                              float64
}

// initialPass measures the first pass: from run's first metrics read to the last HPA's first
// status write (all HPAs are queued at once when the caches have synced).
func (f *soakFigures) initialPass(t *testing.T, reqs []cluster.AuditRequest, n int) {
	firstWrite := map[string]time.Time{}
	for _, r := range reqs {
		switch soakKind(r) {
		case "metrics read":
			if f.firstRead.IsZero() {
				f.firstRead = r.Received
			}
		case "status write":
			if _, ok := firstWrite[r.Name]; !ok {
				firstWrite[r.Name] = r.Received
			}
		}
	}
	if len(firstWrite) != n {
		t.Errorf("run wrote the status of %d HPAs, want all %d", len(firstWrite), n)
	}
	var last time.Time
	for _, at := range firstWrite {
		if at.After(last) {
			last = at
		}
	}
	f.passInitial = last.Sub(f.firstRead)
}

// steady checks and measures the requests of [from, to): one metrics read per reconcile,
// status writes only where the HPA changed, scale writes and events only for the HPA whose
// load changed.
func (f *soakFigures) steady(t *testing.T, reqs []cluster.AuditRequest, from, to time.Time, m1, m2 soakScrape, modified map[string]int, changed string) {
	f.perKind = map[string]int{}
	writes := map[string]int{}
	lastRead := map[string]time.Time{}
	var other, stray []cluster.AuditRequest
	for _, r := range reqs {
		if r.Received.Before(from) || !r.Received.Before(to) {
			continue
		}
		k := soakKind(r)
		f.perKind[k]++
		switch k {
		case "other":
			other = append(other, r)
		case "metrics read":
			sel := r.Namespace + "/" + soakSelector(r)
			if prev, ok := lastRead[sel]; ok {
				f.syncPeriods = append(f.syncPeriods, r.Received.Sub(prev))
			}
			lastRead[sel] = r.Received
		case "status write":
			writes[r.Name]++
		case "scale write", "scale read":
			if r.Name != changed {
				stray = append(stray, r)
			}
		case "event":
			if !strings.HasPrefix(r.Name, changed+".") {
				stray = append(stray, r)
			}
		}
	}
	if len(other) > 0 {
		t.Errorf("run sent requests a steady sync should not need (scale reads with --scale-from-cache, pod lists, ...):\n%s", cluster.SummarizeAudit(other))
	}
	if len(stray) > 0 {
		t.Errorf("run scaled or recorded events for HPAs whose load did not change:\n%s", cluster.SummarizeAudit(stray))
	}
	if got := f.perKind["scale write"]; got != 1 {
		t.Errorf("%d scale writes for %s, want exactly 1 (to the scale-up limit at once)", got, changed)
	}
	for name, w := range writes {
		f.statusWrites += w
		if w > modified[name] {
			t.Errorf("HPA %s: %d status writes but the API server saw %d changes: run wrote a status that had not changed", name, w, modified[name])
		}
	}
	for _, c := range modified {
		f.changes += c
	}
	f.reconcileCount = m2.reconciles - m1.reconciles
	f.readCount = float64(f.perKind["metrics read"])
	if *soakReads == "per-hpa" {
		// A reconcile in flight at either end may have read before the window and been counted
		// in it, or the other way round: at most one per worker at each end.
		if d := f.readCount - f.reconcileCount; d > soakWorkers || d < -soakWorkers {
			t.Errorf("%v metrics reads for %v reconciles: want one read per reconcile (±%d in flight)", f.readCount, f.reconcileCount, soakWorkers)
		}
	} else {
		f.checkSharedReads(t, reqs, from, to)
	}
	if f.reconcileCount > 0 {
		f.readsPerPass = f.readCount / (f.reconcileCount / float64(f.hpas))
	}
	if f.reconcileCount > 0 {
		perHPA := 0
		for k, c := range f.perKind {
			if !soakPerProcess(k) {
				perHPA += c
			}
		}
		f.readsPerSync = f.readCount / f.reconcileCount
		f.reqsPerSync = float64(perHPA) / f.reconcileCount
		all := 0
		for _, c := range f.perKind {
			all += c
		}
		f.reqsPerSyncAll = float64(all) / f.reconcileCount
		secs := m2.at.Sub(m1.at).Seconds()
		f.passFromThroughput = time.Duration(float64(f.hpas) / (f.reconcileCount / secs) * float64(time.Second))
		f.meanReconcile = time.Duration((m2.reconcileSecs - m1.reconcileSecs) / f.reconcileCount * float64(time.Second))
		f.passFromBusy = f.meanReconcile * time.Duration(f.hpas) / soakWorkers
	}
}

// soakSharedValidity is how long run's namespace-wide metrics read serves its syncs
// (controller.maxSharedReadValidity); the audit log's receive times may be closer by the
// requests' latency, hence the margin.
const soakSharedValidity, soakAuditJitter = time.Second, 200 * time.Millisecond

// checkSharedReads checks the metrics reads of --metrics-reads=per-namespace in [from, to):
// every one lists the whole namespace, and no two of a namespace are closer than the validity
// of a read.
func (f *soakFigures) checkSharedReads(t *testing.T, reqs []cluster.AuditRequest, from, to time.Time) {
	prevOf := map[string]time.Time{}
	for _, r := range reqs {
		if r.Received.Before(from) || !r.Received.Before(to) || soakKind(r) != "metrics read" {
			continue
		}
		if sel := soakSelector(r); sel != "" || r.Verb != "list" {
			t.Errorf("metrics read %s %s with selector %q: want the namespace's list", r.Verb, r.RequestURI, sel)
		}
		if prev := prevOf[r.Namespace]; !prev.IsZero() && r.Received.Sub(prev) < soakSharedValidity-soakAuditJitter {
			t.Errorf("metrics reads of namespace %s at %s and %s, %s apart: a read serves its namespace for %s", r.Namespace, prev.Format(time.RFC3339Nano), r.Received.Format(time.RFC3339Nano), r.Received.Sub(prev), soakSharedValidity)
		}
		prevOf[r.Namespace] = r.Received
	}
}

// scaleLatency finds the scale write of the changed HPA.
func (f *soakFigures) scaleLatency(t *testing.T, reqs []cluster.AuditRequest, changed string, setAt, sampleAt time.Time) {
	for _, r := range reqs {
		if soakKind(r) == "scale write" && r.Name == changed {
			f.toWrite, f.fromSample = r.Received.Sub(setAt), r.Received.Sub(sampleAt)
			return
		}
	}
	t.Errorf("no scale write of %s in the audit log", changed)
}

func soakPercentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func (f *soakFigures) String() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	mib := func(v float64) string { return fmt.Sprintf("%.1f MiB", v/(1<<20)) }
	w("SOAK FIGURES: %d HPAs over %d pods in %d namespaces, run -A --workers=%d --sync-period=15s --metrics-reads=%s (defaults otherwise: --scale-from-cache)", f.hpas, f.pods, f.namespaces, soakWorkers, *soakReads)
	w("  machine load (1/5/15 min): at start %s, at end %s (2 cores shared)", f.loadStart, f.loadEnd)
	w("  harness: %d pods ready in %s", f.pods, f.podsReady.Round(time.Second))
	w("  every HPA's status written %s after run started", f.allReconciled.Sub(f.runStarted).Round(time.Second))
	w("  run start to first metrics read: %s; initial full pass (first read to the last HPA's first status write): %s",
		f.firstRead.Sub(f.runStarted).Round(time.Millisecond), f.passInitial.Round(time.Millisecond))
	w("  steady state: %s, %v reconciles, mean reconcile %s", f.steadyFor.Round(time.Second), f.reconcileCount, f.meanReconcile.Round(time.Microsecond))
	w("  full sync pass, steady: %s from throughput (HPAs / reconciles per second); %s of worker time (mean reconcile x HPAs / %d workers)",
		f.passFromThroughput.Round(time.Millisecond), f.passFromBusy.Round(time.Millisecond), soakWorkers)
	w("  metrics reads per full pass (reads / (reconciles / HPAs)): %.2f", f.readsPerPass)
	w("  interval between metrics reads of one selector (per-namespace: the namespace's list): p50 %s, p90 %s, max %s (%d intervals)", soakPercentile(f.syncPeriods, 0.5).Round(time.Millisecond),
		soakPercentile(f.syncPeriods, 0.9).Round(time.Millisecond), soakPercentile(f.syncPeriods, 1).Round(time.Millisecond), len(f.syncPeriods))
	w("  API requests per HPA per sync: %.3f (metrics reads %.3f); %.3f with the lease, informer watches and discovery", f.reqsPerSync, f.readsPerSync, f.reqsPerSyncAll)
	kinds := make([]string, 0, len(f.perKind))
	for k := range f.perKind {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		w("    %-22s %d", k, f.perKind[k])
	}
	w("  status writes %d, HPA changes seen by a watch %d", f.statusWrites, f.changes)
	w("  RSS of run: %s at start of steady state, %s after %s, growth %s; Go heap in use %s -> %s",
		mib(float64(f.rssStart)), mib(float64(f.rssEnd)), f.steadyFor.Round(time.Second), mib(float64(f.rssEnd-f.rssStart)), mib(f.heapStart), mib(f.heapEnd))
	var series []string
	for _, s := range f.rss {
		series = append(series, fmt.Sprintf("%s:%.0f", s.at.Sub(f.runStarted).Round(time.Second), float64(s.rss)/(1<<20)))
	}
	w("  RSS samples (time since run start: MiB): %s", strings.Join(series, " "))
	w("  load change to scale write: %s; from metrics-server's first sample of the new load: %s (scrape interval 10s)",
		f.toWrite.Round(time.Millisecond), f.fromSample.Round(time.Millisecond))
	w("  decisions printed by run: %d", f.decisions)
	return b.String()
}

// TestSoakChurnAndFaults is churnRun at the soak's size: soak.hpas HPAs over soak.pods pods in
// soak.namespaces namespaces, run -A with upstream's 15 s sync period and soakWorkers workers,
// soak.duration of churn at soak.churn-rate changes a second and the four faults.
func TestSoakChurnAndFaults(t *testing.T) {
	n, total := *soakHPAs, *soakPods
	if n < *soakNSs || total%n != 0 {
		t.Fatalf("-soak.pods=%d must be a multiple of -soak.hpas=%d, which must be at least -soak.namespaces=%d", total, n, *soakNSs)
	}
	churnRun(t, churnConfig{hpas: n, namespaces: *soakNSs, podsPerHPA: int32(total / n), steady: *soakDuration,
		sync: 15 * time.Second, rate: *soakRate, workers: *soakChurnWkr, qps: *soakQPS})
}

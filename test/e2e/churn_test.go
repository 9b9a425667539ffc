//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/recording"
	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// Churn and faults: `kubectl hpa run -A` over HPAs spread across namespaces while HPAs are
// created, edited and deleted, Deployments are scaled by hand, and the components run depends
// on fail one after another. Decisions come from run's --record file, writes from the audit
// log, the samples metrics-server served from the test's own reads of metrics.k8s.io.

// churnConfig sizes one churn-and-faults run.
type churnConfig struct {
	hpas, namespaces int
	// podsPerHPA is every Deployment's size at start.
	podsPerHPA int32
	// steady is how long churn and faults last at least: longer when the last fault ends
	// late, so that run's recovery from it is seen.
	steady time.Duration
	// sync is run's --sync-period.
	sync time.Duration
	// rate is the churn's changes per second.
	rate float64
	// workers is run's --workers (its default when 0).
	workers int
	// qps is run's --kube-api-qps, with a burst twice as large (its defaults when 0).
	qps int
}

const (
	churnLabel = "e2e.kubectl-hpa.io/churn"
	// churnPodMilli is every pod's usage at start: the HPAs' 50% target of its 100m request,
	// so that an HPA nobody touches has nothing to do.
	churnPodMilli = 50
	// churnLeaseDuration is histLease's lease duration, which run is given: a write more than
	// this after run's last successful Lease write could follow another holder's.
	churnLeaseDuration = 10 * time.Second
	// churnReadValidity is how long run's namespace-wide metrics read serves its syncs
	// (controller.maxSharedReadValidity at sync periods of 2s and more).
	churnReadValidity = time.Second
	// churnDeleteGrace covers a reconcile that took the HPA from run's cache just before the
	// deletion and writes just after it: the one write a deleted HPA may still get.
	churnDeleteGrace = time.Second
	// churnInFlight bounds the changes in flight at once; a tick that finds them all busy
	// is skipped (and counted).
	churnInFlight = 16
)

// churnHPA is one HPA that lived during the steady state.
type churnHPA struct {
	ns, dep, name string
	// born is when it was created (zero: before the steady state); gone when it was deleted.
	born, gone time.Time
}

func (h *churnHPA) key() string { return h.ns + "/" + h.name }

// churnWindow is a fault: from its start to the moment the component is back (for the Lease,
// to run's first Lease write after it; for a deleted namespace, until its pods are gone).
type churnWindow struct {
	what     string
	from, to time.Time
}

// churnState is what the churn changed, shared by the churn loop and the faults.
type churnState struct {
	mu  sync.Mutex
	rnd *rand.Rand
	// hpas are every HPA of the run by key; live the keys of those not deleted.
	hpas map[string]*churnHPA
	live []string
	// free are Deployments ("ns/name") whose HPA was deleted: the next created HPA takes one.
	free      []string
	gen       map[string]int
	deletedNS map[string]bool
	applied   map[string]int
	failed    map[string]int
	lastErr   map[string]error
	// appliedAt are when the applied changes returned; skipped the ticks that found
	// churnInFlight changes in flight.
	appliedAt []time.Time
	skipped   int
}

const (
	churnEditTarget   = "edit target"
	churnEditBehavior = "edit behavior"
	churnScaleByHand  = "scale Deployment by hand"
	churnDelete       = "delete HPA"
	churnCreate       = "create HPA"
)

// churnHPASpec is HPA name on Deployment dep: 1..2x its start size at a 50% cpu target, and
// a behavior that lets it scale down within seconds (the upstream default window of 300 s
// would hold every scale-down past the run).
func churnHPASpec(ns, dep, name, label string, perHPA int32) *autoscalingv2.HorizontalPodAutoscaler {
	h := hpaSpec{max: 2 * perHPA, downWindowSecond: ptr.To(int32(5))}.build(ns)
	h.Name, h.Spec.ScaleTargetRef.Name = name, dep
	h.Labels = map[string]string{churnLabel: label}
	return h
}

// change makes one change, picked at random: 30% target edits, 20% behavior edits, 20%
// Deployments scaled by hand, 15% deletions, 15% creations (an edit while no Deployment is
// free).
func (s *churnState) change(ctx context.Context, label string, perHPA int32) {
	s.mu.Lock()
	if len(s.live) == 0 {
		s.mu.Unlock()
		return
	}
	p := s.rnd.IntN(100)
	kind := churnEditTarget
	switch {
	case p >= 85:
		if len(s.free) > 0 {
			kind = churnCreate
		}
	case p >= 70:
		kind = churnDelete
	case p >= 50:
		kind = churnScaleByHand
	case p >= 30:
		kind = churnEditBehavior
	}
	var (
		h       *churnHPA
		freeDep string
	)
	switch kind {
	case churnCreate:
		i := s.rnd.IntN(len(s.free))
		freeDep = s.free[i]
		s.free = slices.Delete(s.free, i, i+1)
	case churnDelete:
		i := s.rnd.IntN(len(s.live))
		h = s.hpas[s.live[i]]
		s.live = slices.Delete(s.live, i, i+1)
	default:
		h = s.hpas[s.live[s.rnd.IntN(len(s.live))]]
	}
	targets, windows, ups := []int32{30, 50, 70}, []int32{0, 5, 15}, []int32{1, 2, 4}
	target, window, up := targets[s.rnd.IntN(3)], windows[s.rnd.IntN(3)], ups[s.rnd.IntN(3)]
	byHand := max(1, perHPA-1)
	if s.rnd.IntN(2) == 0 {
		byHand = perHPA + 1
	}
	s.mu.Unlock()

	cs := shared.Client()
	var err error
	switch kind {
	case churnEditTarget:
		patch := fmt.Sprintf(`{"spec":{"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":%d}}}]}}`, target)
		_, err = cs.AutoscalingV2().HorizontalPodAutoscalers(h.ns).Patch(ctx, h.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	case churnEditBehavior:
		patch := fmt.Sprintf(`{"spec":{"behavior":{"scaleDown":{"stabilizationWindowSeconds":%d},"scaleUp":{"stabilizationWindowSeconds":0,"selectPolicy":"Max","policies":[{"type":"Pods","value":%d,"periodSeconds":15}]}}}}`, window, up)
		_, err = cs.AutoscalingV2().HorizontalPodAutoscalers(h.ns).Patch(ctx, h.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	case churnScaleByHand:
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, byHand)
		_, err = cs.AppsV1().Deployments(h.ns).Patch(ctx, h.dep, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	case churnDelete:
		err = cs.AutoscalingV2().HorizontalPodAutoscalers(h.ns).Delete(ctx, h.name, metav1.DeleteOptions{})
	case churnCreate:
		ns, dep, _ := strings.Cut(freeDep, "/")
		s.mu.Lock()
		s.gen[freeDep]++
		name := fmt.Sprintf("%s-%d", dep, s.gen[freeDep])
		s.mu.Unlock()
		h = &churnHPA{ns: ns, dep: dep, name: name}
		_, err = cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, churnHPASpec(ns, dep, name, label, perHPA), metav1.CreateOptions{})
	}
	now := time.Now()

	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil && !(kind == churnDelete && apierrors.IsNotFound(err)) {
		s.failed[kind]++
		s.lastErr[kind] = err
		// Not done (the API server is down, the namespace is being deleted): undo the pick.
		switch {
		case kind == churnDelete && !s.deletedNS[h.ns]:
			s.live = append(s.live, h.key())
		case kind == churnCreate && !s.deletedNS[h.ns]:
			s.free = append(s.free, freeDep)
		}
		return
	}
	s.applied[kind]++
	s.appliedAt = append(s.appliedAt, now)
	switch kind {
	case churnDelete:
		if h.gone.IsZero() {
			h.gone = now
		}
		if !s.deletedNS[h.ns] {
			s.free = append(s.free, h.ns+"/"+h.dep)
		}
	case churnCreate:
		h.born = now
		s.hpas[h.key()] = h
		if s.deletedNS[h.ns] {
			h.gone = now
		} else {
			s.live = append(s.live, h.key())
		}
	}
}

// deleteNamespace deletes ns and, as the namespace controller would (the harness runs none),
// its HPAs, then its workloads. Its HPAs are gone when their deletion returned.
func (s *churnState) deleteNamespace(t *testing.T, ns string) {
	t.Helper()
	s.mu.Lock()
	s.deletedNS[ns] = true
	s.live = slices.DeleteFunc(s.live, func(k string) bool { return strings.HasPrefix(k, ns+"/") })
	s.free = slices.DeleteFunc(s.free, func(k string) bool { return strings.HasPrefix(k, ns+"/") })
	s.mu.Unlock()
	ctx, cs, all := context.Background(), shared.Client(), metav1.ListOptions{}
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting namespace %s: %v", ns, err)
	}
	if err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil {
		t.Fatalf("deleting the HPAs of namespace %s: %v", ns, err)
	}
	gone := time.Now()
	s.mu.Lock()
	for _, h := range s.hpas {
		if h.ns == ns && h.gone.IsZero() {
			h.gone = gone
		}
	}
	s.mu.Unlock()
	_ = cs.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
	_ = cs.AppsV1().ReplicaSets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
	_ = cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
}

// churnSeen is a sample timestamp metrics.k8s.io served, and when the test's read of it ended.
type churnSeen struct{ at, ts time.Time }

// churnServed follows what metrics.k8s.io serves: one namespace's PodMetrics every
// churnConfig.followEvery, the namespaces in turn.
type churnServed struct {
	mu sync.Mutex
	// byPod ("ns/pod") holds each new sample timestamp with the end of the first read that
	// served it.
	byPod map[string][]churnSeen
	polls int
}

// followEvery is how often the test reads a namespace's PodMetrics: every 100 ms, or, with
// more than 500 pods a namespace, 5,000 pods' metrics a second. Every namespace is read well
// within metrics-server's 15 s resolution at every size (each second at 200 HPAs in 10
// namespaces, every 5 s at 1,000 in 50, every 10 s at 5,000 in 50), and at 5,000 HPAs the
// test adds 1.5 times the samples run reads to what metrics-server serves, where reading each
// namespace every 5 s it added three times, on the 2 cores the cluster and run share.
func (c churnConfig) followEvery() time.Duration {
	perNS := int(c.podsPerHPA) * c.hpas / max(1, c.namespaces)
	return max(100*time.Millisecond, time.Duration(perNS)*time.Second/5000)
}

func churnFollowMetrics(ctx context.Context, t *testing.T, s *churnState, nss []string, every time.Duration) (*churnServed, <-chan struct{}) {
	t.Helper()
	mc, err := metricsclient.NewForConfig(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	served := &churnServed{byPod: map[string][]churnSeen{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			ns := nss[i%len(nss)]
			s.mu.Lock()
			deleted := s.deletedNS[ns]
			s.mu.Unlock()
			if deleted {
				continue
			}
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			list, err := mc.MetricsV1beta1().PodMetricses(ns).List(rctx, metav1.ListOptions{})
			cancel()
			if err != nil {
				continue
			}
			at := time.Now()
			served.mu.Lock()
			served.polls++
			for _, pm := range list.Items {
				k := ns + "/" + pm.Name
				seen := served.byPod[k]
				if n := len(seen); n == 0 || pm.Timestamp.After(seen[n-1].ts) {
					served.byPod[k] = append(seen, churnSeen{at: at, ts: pm.Timestamp.Time})
				}
			}
			served.mu.Unlock()
		}
	}()
	return served, done
}

// newestBy is the newest sample of pod ("ns/pod") a read that ended by then had served.
func (s *churnServed) newestBy(pod string, by time.Time) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ts time.Time
	for _, seen := range s.byPod[pod] {
		if seen.at.After(by) {
			break
		}
		ts = seen.ts
	}
	return ts, !ts.IsZero()
}

// TestChurnAndFaultsEveryLiveHPADecidedEachPeriodAndEveryWriteExplained is churnRun at 200
// HPAs over 400 pods in 10 namespaces for 2 minutes at 5 changes a second, with a 10 s sync
// period; TestSoakChurnAndFaults (make soak) is the same at the soak's size. It restarts the
// API server and metrics-server, so it runs with the serial tests (E2E_SERIAL).
func TestChurnAndFaultsEveryLiveHPADecidedEachPeriodAndEveryWriteExplained(t *testing.T) {
	churnRun(t, churnConfig{hpas: 200, namespaces: 10, podsPerHPA: 2, steady: 2 * time.Minute, sync: 10 * time.Second, rate: 5})
}

// churnRun runs `kubectl hpa run -A` over cfg.hpas HPAs, each on its own Deployment, spread
// evenly over cfg.namespaces namespaces, through cfg.steady of churn at cfg.rate changes a
// second and four faults one after another: metrics-server restarted, a namespace deleted
// with its HPAs, the API server restarted, and the API server down past the Lease's
// duration, so that run loses the Lease and takes it again. It then asserts that every live
// HPA was decided at least every 1.5 sync periods outside the fault windows (and within 1.5
// periods of each window's end), that no decision used a sample older than one the metrics
// API had served before that decision's read could start, that run wrote nothing for an HPA
// after its deletion (beyond a reconcile in flight), that every write of run came while its
// Lease was fresh and no one else wrote an HPA's status, and that every scale write was a
// recorded decision's, one for one, whose replay reproduces every decision exactly.
func churnRun(t *testing.T, cfg churnConfig) {
	ctx := context.Background()
	phase := faultPhases(t)
	leaseNS := namespace(t, "churn-lease")
	label := leaseNS
	user := "e2e:kubectl-hpa-churn-" + leaseNS
	var nss []string
	for range cfg.namespaces {
		nss = append(nss, namespace(t, "churn"))
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("churn seed %d", seed)
	s := &churnState{
		rnd:  rand.New(rand.NewPCG(seed, seed)),
		hpas: map[string]*churnHPA{}, gen: map[string]int{}, deletedNS: map[string]bool{},
		applied: map[string]int{}, failed: map[string]int{}, lastErr: map[string]error{},
	}

	churnCreateWorkloads(t, s, nss, cfg, label)
	phase(fmt.Sprintf("%d Deployments of %d pods and their HPAs in %d namespaces", cfg.hpas, cfg.podsPerHPA, cfg.namespaces))
	churnWaitSamples(t, nss, cfg.hpas*int(cfg.podsPerHPA))
	phase("metrics-server has a sample of every pod")

	followCtx, stopFollowing := context.WithCancel(ctx)
	defer stopFollowing()
	served, followed := churnFollowMetrics(followCtx, t, s, nss, cfg.followEvery())

	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	k := pluginAs(t, user)
	recorded := filepath.Join(t.TempDir(), "churn.jsonl.gz")
	args := append([]string{"-A", "-l", churnLabel + "=" + label, "--leader-elect-lease-namespace=" + leaseNS,
		"--sync-period=" + cfg.sync.String(), "-o", "json", "--record", recorded}, histLease...)
	if cfg.workers > 0 {
		args = append(args, fmt.Sprintf("--workers=%d", cfg.workers))
	}
	if cfg.qps > 0 {
		args = append(args, fmt.Sprintf("--kube-api-qps=%d", cfg.qps), fmt.Sprintf("--kube-api-burst=%d", 2*cfg.qps))
	}
	stopRun := churnStartRun(t, k, args...)
	churnWaitAllDecided(t, nss, cfg.hpas)
	steadyStart := time.Now()
	phase("run has decided every HPA; churn and faults start")

	// Each tick starts its change without waiting for the one before, so that a slow API
	// server does not lower the rate; at most churnInFlight are in flight.
	churnCtx, stopChurn := context.WithCancel(ctx)
	churned := make(chan struct{})
	go func() {
		defer close(churned)
		var inFlight sync.WaitGroup
		defer inFlight.Wait()
		slots := make(chan struct{}, churnInFlight)
		tick := time.NewTicker(time.Duration(float64(time.Second) / cfg.rate))
		defer tick.Stop()
		for {
			select {
			case <-churnCtx.Done():
				return
			case <-tick.C:
			}
			select {
			case slots <- struct{}{}:
			default:
				s.mu.Lock()
				s.skipped++
				s.mu.Unlock()
				continue
			}
			inFlight.Go(func() {
				defer func() { <-slots }()
				s.change(churnCtx, label, cfg.podsPerHPA)
			})
		}
	}()

	var windows []churnWindow
	prevEnd := steadyStart
	// at waits for a fault's planned start, at least a sync period after the previous one's end.
	at := func(frac float64) {
		time.Sleep(time.Until(maxTime(steadyStart.Add(time.Duration(frac*float64(cfg.steady))), prevEnd.Add(cfg.sync))))
	}
	at(0.1)
	from := time.Now()
	faultOutage(t, "metrics-server", func() error { return shared.StopMetricsServer(ctx) }, func() error { return shared.StartMetricsServer(ctx) })()
	windows = append(windows, churnWindow{"metrics-server restarted", from, time.Now()})
	prevEnd = time.Now()
	phase("metrics-server restarted")

	at(0.35)
	victim := nss[len(nss)-1]
	from = time.Now()
	s.deleteNamespace(t, victim)
	// Deleting a namespace's HPAs, Deployments, ReplicaSets and pods is a burst of writes the
	// API server serves beside the syncs' status writes (at 5,000 HPAs, 1,000 pods at once,
	// each deleted twice: marked, then removed by the node stand-in).
	eventually(t, 5*time.Minute, "the pods of namespace "+victim+" are gone", func(ctx context.Context) error {
		left, err := shared.Client().CoreV1().Pods(victim).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return err
		}
		if len(left.Items) > 0 {
			return fmt.Errorf("pod %s is still there", left.Items[0].Name)
		}
		return nil
	})
	windows = append(windows, churnWindow{"namespace " + victim + " deleted with its HPAs, until its pods are gone", from, time.Now()})
	prevEnd = time.Now()
	phase("namespace " + victim + " deleted with its HPAs")

	at(0.5)
	from = time.Now()
	faultOutage(t, "the API server", shared.StopAPIServer, func() error { return shared.StartAPIServer(ctx) })()
	windows = append(windows, churnWindow{"API server restarted", from, time.Now()})
	prevEnd = time.Now()
	phase("API server restarted")

	at(0.75)
	from = time.Now()
	restore := faultOutage(t, "the API server", shared.StopAPIServer, func() error { return shared.StartAPIServer(ctx) })
	// Everything after this mark was sent after the restart.
	back, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(churnLeaseDuration + 2*time.Second)
	restore()
	var regained time.Time
	eventually(t, time.Minute, "run writes its Lease again after the outage", func(context.Context) error {
		for _, w := range pluginWrites(t, back, user) {
			if w.Resource == "leases" && w.Code/100 == 2 {
				regained = w.Received
				return nil
			}
		}
		return errors.New("no Lease write since the API server is back")
	})
	windows = append(windows, churnWindow{"Lease lost (API server down past the lease duration) and regained", from, regained})
	prevEnd = time.Now()
	phase("run lost the Lease and took it again")

	time.Sleep(time.Until(maxTime(steadyStart.Add(cfg.steady), prevEnd.Add(2*cfg.sync))))
	stopChurn()
	<-churned
	stopAt := time.Now()
	runOut, errOut := stopRun()
	stopFollowing()
	<-followed
	phase("churn stopped, run stopped")

	if want := "lost Lease " + leaseNS + "/kubectl-hpa: "; !strings.Contains(errOut, want) {
		t.Errorf("run's stderr lacks %q: the Lease fault did not take the Lease from it", want)
	}
	reqs, err := shared.AuditSince(mark, cluster.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	f := &churnFigures{cfg: cfg, steadyFor: stopAt.Sub(steadyStart), windows: windows, victim: victim}
	s.mu.Lock()
	f.applied, f.failed, f.lastErr, f.appliedAt, f.skipped = s.applied, s.failed, s.lastErr, s.appliedAt, s.skipped
	hpas := s.hpas
	s.mu.Unlock()
	served.mu.Lock()
	f.polls = served.polls
	served.mu.Unlock()
	syncs := f.read(t, recorded, served)
	f.decidedEachPeriod(t, syncs, hpas, steadyStart, stopAt, reqs, user, errOut)
	f.writes(t, reqs, user, leaseNS, nss, hpas, syncs)
	// The replay: simulate --from-recording, not rerun.Run in this process, whose race
	// detector made replaying 2,866 syncs take over 10 minutes.
	t.Log(f.String())
	_, simTook := checkSimulateReplays(t, k, recorded, runOut, len(syncs))
	t.Logf("kubectl hpa simulate --from-recording replayed the %d syncs in %s, each printed as run printed it, every decision, outcome and history kept run's",
		f.syncs, simTook.Round(time.Millisecond))
}

// churnStartRun starts `kubectl hpa run` with its output in files: thousands of decisions
// are too many for the test log, which gets only the end of its stderr (its notes, with -o
// json) if the test fails. stop interrupts it (Ctrl-C) and returns the file of its stdout
// (a decision a line, gigabytes at 5,000 HPAs) and its stderr.
func churnStartRun(t *testing.T, k cluster.Kubectl, args ...string) (stop func() (string, string)) {
	t.Helper()
	dir := t.TempDir()
	stdout, err := os.Create(filepath.Join(dir, "run.out"))
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(filepath.Join(dir, "run.err"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := k.Command(ctx, append([]string{"hpa", "run"}, args...)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	var (
		once   sync.Once
		errOut []byte
	)
	stop = func() (string, string) {
		once.Do(func() {
			cancel()
			if err := cmd.Wait(); err != nil && ctx.Err() == nil {
				t.Errorf("kubectl hpa run: %v", err)
			}
			stdout.Close()
			stderr.Close()
			errOut, _ = os.ReadFile(stderr.Name())
		})
		return stdout.Name(), string(errOut)
	}
	t.Cleanup(func() {
		_, errOut := stop()
		if t.Failed() {
			t.Logf("kubectl hpa run's stderr (last 8 KiB):\n%s", errOut[max(0, len(errOut)-8192):])
		}
	})
	return stop
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// churnCreateWorkloads creates the Deployments, their load and their HPAs, round-robin over
// the namespaces, and waits until every pod is ready.
func churnCreateWorkloads(t *testing.T, s *churnState, nss []string, cfg churnConfig, label string) {
	t.Helper()
	cs := shared.Client()
	idx := make(chan int)
	errs := make(chan error, cfg.hpas)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range idx {
				ns, dep := nss[i%len(nss)], fmt.Sprintf("w%04d", i)
				shared.Load().Set(cluster.Workload{Namespace: ns, Selector: map[string]string{"app": dep}},
					cluster.Load{CPUMilli: int64(cfg.podsPerHPA) * churnPodMilli, MemoryBytes: int64(cfg.podsPerHPA) * 64 << 20})
				if _, err := cs.AppsV1().Deployments(ns).Create(context.Background(), deploymentSpec{name: dep, replicas: cfg.podsPerHPA}.build(ns), metav1.CreateOptions{}); err != nil {
					errs <- err
					continue
				}
				if _, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(context.Background(), churnHPASpec(ns, dep, dep, label, cfg.podsPerHPA), metav1.CreateOptions{}); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range cfg.hpas {
		idx <- i
	}
	close(idx)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range cfg.hpas {
		h := &churnHPA{ns: nss[i%len(nss)], dep: fmt.Sprintf("w%04d", i), name: fmt.Sprintf("w%04d", i)}
		s.hpas[h.key()] = h
		s.live = append(s.live, h.key())
	}
	want := int32(cfg.hpas) * cfg.podsPerHPA
	eventually(t, 45*time.Minute, fmt.Sprintf("%d pods ready", want), func(ctx context.Context) error {
		var ready int32
		for _, ns := range nss {
			list, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, d := range list.Items {
				ready += min(d.Status.ReadyReplicas, cfg.podsPerHPA)
			}
		}
		if ready != want {
			time.Sleep(2 * time.Second)
			return fmt.Errorf("%d/%d pods ready", ready, want)
		}
		return nil
	})
}

// churnWaitSamples waits until metrics-server has a sample of every pod (the soak waits with it
// too, so that its first pass decides from complete metrics).
func churnWaitSamples(t *testing.T, nss []string, want int) {
	t.Helper()
	mc, err := metricsclient.NewForConfig(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Minute, fmt.Sprintf("metrics-server has samples of %d pods", want), func(ctx context.Context) error {
		got := 0
		for _, ns := range nss {
			list, err := mc.MetricsV1beta1().PodMetricses(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			got += len(list.Items)
		}
		if got != want {
			time.Sleep(2 * time.Second)
			return fmt.Errorf("%d samples", got)
		}
		return nil
	})
}

// churnWaitAllDecided waits until run has written every HPA's status from metrics
// (ScalingActive true).
func churnWaitAllDecided(t *testing.T, nss []string, want int) {
	t.Helper()
	eventually(t, 45*time.Minute, fmt.Sprintf("run has decided all %d HPAs from metrics", want), func(ctx context.Context) error {
		done := 0
		for _, ns := range nss {
			list, err := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, h := range list.Items {
				if c := hpaCondition(&h, autoscalingv2.ScalingActive); c != nil && c.Status == corev1.ConditionTrue {
					done++
				}
			}
		}
		if done != want {
			time.Sleep(2 * time.Second)
			return fmt.Errorf("%d/%d HPAs decided from metrics", done, want)
		}
		return nil
	})
}

// churnFigures are what the run measured, and what its checks counted.
type churnFigures struct {
	cfg               churnConfig
	steadyFor         time.Duration
	windows           []churnWindow
	victim            string
	applied, failed   map[string]int
	lastErr           map[string]error
	appliedAt         []time.Time
	skipped           int
	hpasSeen, deleted int
	syncs             int
	gaps              []time.Duration
	// clearGaps are the gaps that neither overlap a fault window nor start within 1.5 periods
	// of its end: the intervals the loop's schedule alone explains.
	clearGaps          []time.Duration
	excused            int
	samplesChecked     int
	scaleWrites        int
	hpaWrites          int
	polls              int
	leaseWrites        int
	writesInGrace      int
	maxAfterLeaseWrite time.Duration
	maxDecisionToWrite time.Duration
	ups, downs         int
}

// decidedEachPeriod checks that every HPA was decided at least every 1.5 sync periods of its
// life in the steady state (from its creation or the steady state's start to its deletion or
// the stop), except across a fault window, after whose end it must be decided within 1.5
// periods.
func (f *churnFigures) decidedEachPeriod(t *testing.T, syncs []churnSync, hpas map[string]*churnHPA, from, to time.Time, reqs []cluster.AuditRequest, user, runErr string) {
	bound := f.cfg.sync * 3 / 2
	times := map[string][]time.Time{}
	for _, s := range syncs {
		times[s.key] = append(times[s.key], s.now)
		f.syncs++
	}
	for _, ts := range times {
		slices.SortFunc(ts, time.Time.Compare)
	}
	var late []string
	for key, h := range hpas {
		start, end := maxTime(from, h.born), to
		if !h.gone.IsZero() {
			f.deleted++
			if h.gone.Before(end) {
				end = h.gone
			}
		}
		if !end.After(start) {
			continue
		}
		f.hpasSeen++
		points := []time.Time{start}
		for _, at := range times[key] {
			if at.After(start) && at.Before(end) {
				points = append(points, at)
			}
		}
		points = append(points, end)
		for i := 1; i < len(points); i++ {
			a, b := points[i-1], points[i]
			gap := b.Sub(a)
			if !f.nearFault(a, b, bound) {
				f.clearGaps = append(f.clearGaps, gap)
			}
			if gap <= bound {
				f.gaps = append(f.gaps, gap)
				continue
			}
			excused := false
			for _, w := range f.windows {
				if a.Before(w.to) && b.After(w.from) && !b.After(w.to.Add(bound)) {
					excused = true
				}
			}
			if excused {
				f.excused++
				continue
			}
			f.gaps = append(f.gaps, gap)
			late = append(late, fmt.Sprintf("%s: no decision for %s, from %s to %s (%s; %s)", key, gap.Round(time.Millisecond), a.Format(time.StampMilli), b.Format(time.StampMilli),
				churnMeanwhile(syncs, reqs, user, h.ns, a, b), churnFailedSyncs(runErr, key, a, b)))
		}
	}
	slices.Sort(late)
	if len(late) > 0 {
		t.Errorf("%d times an HPA went undecided for more than 1.5 sync periods (%s) outside the fault windows or past their end + 1.5 periods; the first 20:\n%s",
			len(late), bound, strings.Join(late[:min(20, len(late))], "\n"))
	}
}

// nearFault reports whether the interval from a to b overlaps a fault window or the recovery
// after it (bound).
func (f *churnFigures) nearFault(a, b time.Time, bound time.Duration) bool {
	for _, w := range f.windows {
		if a.Before(w.to.Add(bound)) && b.After(w.from) {
			return true
		}
	}
	return false
}

// churnMeanwhile says what run did between a and b: its syncs of every HPA, and its metrics
// reads of namespace ns with the slowest one's latency (the audit log's).
func churnMeanwhile(all []churnSync, reqs []cluster.AuditRequest, user, ns string, a, b time.Time) string {
	syncs := 0
	// The longest stretch with no sync of any HPA tells a stalled process (or starved workers)
	// from an HPA left out of the queue.
	var times []time.Time
	for _, s := range all {
		if s.now.After(a) && s.now.Before(b) {
			syncs++
			times = append(times, s.now)
		}
	}
	slices.SortFunc(times, time.Time.Compare)
	var pause time.Duration
	prev := a
	for _, at := range append(times, b) {
		pause = max(pause, at.Sub(prev))
		prev = at
	}
	reads := 0
	var slowest time.Duration
	for _, r := range reqs {
		if r.User == user && r.Namespace == ns && faultIsMetricsRead(r) && r.Received.After(a) && r.Received.Before(b) {
			reads++
			if !r.Completed.IsZero() {
				slowest = max(slowest, r.Completed.Sub(r.Received))
			}
		}
	}
	return fmt.Sprintf("meanwhile %d syncs of all HPAs, none for %s at most, %d metrics reads of %s, the slowest %s", syncs, pause.Round(time.Millisecond), reads, ns, slowest.Round(time.Millisecond))
}

// churnFailedSyncs says which syncs of the HPA key run logged as failed between a and b (klog's
// error lines: a sync that fails before deciding, such as one skipped because the informer has
// not seen run's own last status write, prints no decision).
func churnFailedSyncs(runErr, key string, a, b time.Time) string {
	var failed []string
	for _, line := range strings.Split(runErr, "\n") {
		if !strings.Contains(line, `"Reconciling HPA failed"`) || !strings.Contains(line, `hpa="`+key+`"`) || len(line) < 21 {
			continue
		}
		// klog's header: Lmmdd hh:mm:ss.uuuuuu, in local time, without the year.
		at, err := time.ParseInLocation("0102 15:04:05.000000", line[1:21], time.Local)
		if err != nil {
			continue
		}
		at = at.AddDate(a.Year(), 0, 0)
		if at.After(a) && at.Before(b) {
			msg := line
			if i := strings.Index(line, `err="`); i >= 0 {
				msg = line[i:]
			}
			failed = append(failed, at.Format(time.StampMilli)+" "+msg)
		}
	}
	if len(failed) == 0 {
		return "run logged no failed sync of it meanwhile"
	}
	return fmt.Sprintf("run logged %d failed syncs of it meanwhile: %s", len(failed), strings.Join(failed, "; "))
}

// churnSync is what the checks read of a recorded sync; target is the HPA's
// "ns/Deployment", empty when the HPA could not be read.
type churnSync struct {
	key, target      string
	now              time.Time
	current, desired int32
	// write says the sync rescaled and its scale write succeeded.
	write bool
	// why is, for a sync that rescaled without a write, why (its write's error, its dry run).
	why string
}

// read reads the recording once, as a stream (a 5,000-HPA soak records a gigabyte): what the
// checks read of each sync, and each sync's samples checked fresh.
func (f *churnFigures) read(t *testing.T, path string, served *churnServed) []churnSync {
	r, err := recording.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var (
		syncs []churnSync
		stale []string
	)
	for s, err := range r.All() {
		if err != nil {
			t.Fatal(err)
		}
		c := churnSync{key: s.Key, now: s.Now, current: s.Result.CurrentReplicas, desired: s.Result.DesiredReplicas,
			write: s.Result.Rescale && s.ScaleWriteError == nil && s.DryRunReason == ""}
		switch {
		case !s.Result.Rescale:
		case s.ScaleWriteError != nil:
			c.why = "its write failed: " + s.ScaleWriteError.Message
		case s.DryRunReason != "":
			c.why = "dry run: " + s.DryRunReason
		}
		if s.HPA != nil {
			ns, _, _ := strings.Cut(s.Key, "/")
			c.target = ns + "/" + s.HPA.Spec.ScaleTargetRef.Name
		}
		syncs = append(syncs, c)
		stale = f.fresh(s, served, stale)
	}
	if len(stale) > 0 {
		t.Errorf("%d decisions on samples older than the metrics API served before their read; the first 20:\n%s", len(stale), strings.Join(stale[:min(20, len(stale))], "\n"))
	}
	if f.samplesChecked == 0 {
		t.Error("no decision's sample could be checked against what the metrics API served")
	}
	return syncs
}

// fresh checks that the decision of s used no sample of a pod older than one metrics.k8s.io
// had served the test before its shared read could have been sent (the decision's time less
// the read's validity), adding what it finds to stale.
func (f *churnFigures) fresh(s *recording.Sync, served *churnServed, stale []string) []string {
	ns, _, _ := strings.Cut(s.Key, "/")
	for _, m := range s.Metrics {
		for pod, smp := range m.PodSamples {
			newest, ok := served.newestBy(ns+"/"+pod, s.Now.Add(-churnReadValidity))
			if !ok {
				continue
			}
			f.samplesChecked++
			if smp.Timestamp.Before(newest) {
				stale = append(stale, fmt.Sprintf("%s at %s: pod %s's sample of %s, but metrics.k8s.io had served the one of %s by %s",
					s.Key, s.Now.Format(time.StampMilli), pod, smp.Timestamp.Format(time.StampMilli), newest.Format(time.StampMilli), s.Now.Add(-churnReadValidity).Format(time.StampMilli)))
			}
		}
	}
	return stale
}

// churnExpected is a recorded sync of an HPA on target; write says it rescaled and its scale
// write succeeded, used that the audit log holds that write.
type churnExpected struct {
	target      string // ns/Deployment
	at          time.Time
	to          int32
	write, used bool
	from        int32
	why         string
}

// writes checks run's writes in the audit log: none for an HPA after its deletion (beyond a
// reconcile in flight), each while run's Lease was fresh, no HPA status written by anyone
// else, and the scale writes one for one the recorded decisions to rescale whose write
// succeeded.
func (f *churnFigures) writes(t *testing.T, reqs []cluster.AuditRequest, user, leaseNS string, nss []string, hpas map[string]*churnHPA, syncs []churnSync) {
	ours := map[string]bool{}
	for _, ns := range nss {
		ours[ns] = true
	}
	var leaseWrites []time.Time
	for _, r := range reqs {
		if r.User == user && r.Resource == "leases" && r.Namespace == leaseNS && r.IsWrite() && r.Code/100 == 2 {
			leaseWrites = append(leaseWrites, r.Received)
		}
	}
	slices.SortFunc(leaseWrites, time.Time.Compare)
	f.leaseWrites = len(leaseWrites)
	var afterDelete, staleLease, others, unexplained []string
	// syncsOf are the recorded syncs of the HPAs of each target, in time order: a scale
	// write is the last one's before it (an HPA's next sync starts once its write returned).
	syncsOf := map[string][]*churnExpected{}
	var expected []*churnExpected
	for _, s := range syncs {
		if s.target == "" {
			continue
		}
		e := &churnExpected{target: s.target, at: s.now, from: s.current, to: s.desired, write: s.write, why: s.why}
		syncsOf[e.target] = append(syncsOf[e.target], e)
		if e.write {
			expected = append(expected, e)
			if s.desired > s.current {
				f.ups++
			} else {
				f.downs++
			}
		}
	}
	for _, ss := range syncsOf {
		slices.SortStableFunc(ss, func(a, b *churnExpected) int { return a.at.Compare(b.at) })
	}
	for _, r := range reqs {
		if !r.IsWrite() {
			continue
		}
		// An HPA write is its status, or the decision history annotation written with it.
		hpa := r.Resource == "horizontalpodautoscalers"
		scale := r.Resource == "deployments" && r.Subresource == "scale"
		if r.User != user {
			if hpa && r.Subresource == "status" && ours[r.Namespace] {
				others = append(others, r.String())
			}
			continue
		}
		if !hpa && !scale {
			continue
		}
		// The Lease: the last successful Lease write before this write.
		i, _ := slices.BinarySearchFunc(leaseWrites, r.Received, time.Time.Compare)
		if i == 0 {
			staleLease = append(staleLease, fmt.Sprintf("%s at %s, before run's first Lease write", r, r.Received.Format(time.StampMilli)))
		} else if since := r.Received.Sub(leaseWrites[i-1]); since >= churnLeaseDuration {
			staleLease = append(staleLease, fmt.Sprintf("%s at %s, %s after run's last Lease write", r, r.Received.Format(time.StampMilli), since.Round(time.Millisecond)))
		} else {
			f.maxAfterLeaseWrite = max(f.maxAfterLeaseWrite, since)
		}
		if hpa {
			f.hpaWrites++
			if h, ok := hpas[r.Namespace+"/"+r.Name]; ok && !h.gone.IsZero() && r.Received.After(h.gone) {
				if r.Received.Sub(h.gone) > churnDeleteGrace {
					afterDelete = append(afterDelete, fmt.Sprintf("%s at %s, %s after the HPA was deleted", r, r.Received.Format(time.StampMilli), r.Received.Sub(h.gone).Round(time.Millisecond)))
				} else {
					f.writesInGrace++
				}
			}
		}
		if scale && r.Code/100 == 2 {
			f.scaleWrites++
			ss := syncsOf[r.Namespace+"/"+r.Name]
			i, _ := slices.BinarySearchFunc(ss, r.Received, func(e *churnExpected, at time.Time) int { return e.at.Compare(at) })
			if i == 0 || !ss[i-1].write || ss[i-1].used {
				// What the recording holds before it, to tell a write run thought failed (the
				// server applied it, the answer was lost) from one it never decided.
				last := "no recorded sync of an HPA on it before"
				if i > 0 {
					e := ss[i-1]
					last = fmt.Sprintf("the last sync before, at %s: %d -> %d, write %v, used %v %s", e.at.Format(time.StampMilli), e.from, e.to, e.write, e.used, e.why)
				}
				unexplained = append(unexplained, fmt.Sprintf("%s at %s; %s", r, r.Received.Format(time.StampMilli), last))
				continue
			}
			match := ss[i-1]
			match.used = true
			f.maxDecisionToWrite = max(f.maxDecisionToWrite, r.Received.Sub(match.at))
		}
	}
	var unwritten []string
	for _, e := range expected {
		if !e.used {
			unwritten = append(unwritten, fmt.Sprintf("%s to %d at %s", e.target, e.to, e.at.Format(time.StampMilli)))
		}
	}
	for _, c := range []struct {
		what  string
		found []string
	}{
		{"HPA writes of run for HPAs deleted more than " + churnDeleteGrace.String() + " before", afterDelete},
		{fmt.Sprintf("writes of run without a successful Lease write in the %s before (another holder could have written)", churnLeaseDuration), staleLease},
		{"HPA status writes by another client than run", others},
		{"scale writes of run that the last recorded sync of an HPA on that target before the write does not explain", unexplained},
		{"recorded decisions to rescale whose write succeeded but is not in the audit log", unwritten},
	} {
		if len(c.found) > 0 {
			t.Errorf("%d %s; the first 20:\n%s", len(c.found), c.what, strings.Join(c.found[:min(20, len(c.found))], "\n"))
		}
	}
	if f.ups == 0 || f.downs == 0 {
		t.Errorf("run scaled up %d and down %d times under churn, want both", f.ups, f.downs)
	}
}

func (f *churnFigures) String() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	flags := ""
	if f.cfg.workers > 0 {
		flags += fmt.Sprintf(" --workers=%d", f.cfg.workers)
	}
	if f.cfg.qps > 0 {
		flags += fmt.Sprintf(" --kube-api-qps=%d", f.cfg.qps)
	}
	w("CHURN FIGURES: %d HPAs over %d pods in %d namespaces (%d each), run -A --sync-period=%s%s, churn at %.0f changes/s for %s",
		f.cfg.hpas, int32(f.cfg.hpas)*f.cfg.podsPerHPA, f.cfg.namespaces, f.cfg.hpas/f.cfg.namespaces, f.cfg.sync, flags, f.cfg.rate, f.steadyFor.Round(time.Second))
	total := 0
	kinds := []string{churnEditTarget, churnEditBehavior, churnScaleByHand, churnDelete, churnCreate}
	var parts []string
	for _, k := range kinds {
		total += f.applied[k]
		parts = append(parts, fmt.Sprintf("%s %d", k, f.applied[k]))
	}
	// Outside the fault windows, where the API server answers.
	outside, outsideFor := 0, f.steadyFor
	for _, win := range f.windows {
		outsideFor -= win.to.Sub(win.from)
	}
	for _, at := range f.appliedAt {
		in := false
		for _, win := range f.windows {
			in = in || (!at.Before(win.from) && !at.After(win.to))
		}
		if !in {
			outside++
		}
	}
	w("  changes applied: %d (%.2f/s; outside the fault windows %d in %s, %.2f/s): %s; ticks skipped with %d changes in flight: %d",
		total, float64(total)/f.steadyFor.Seconds(), outside, outsideFor.Round(time.Second), float64(outside)/outsideFor.Seconds(), strings.Join(parts, ", "), churnInFlight, f.skipped)
	for _, k := range kinds {
		if f.failed[k] > 0 {
			w("  changes failed (during outages): %s %d, last: %v", k, f.failed[k], f.lastErr[k])
		}
	}
	w("  namespace deleted with its HPAs: %s", f.victim)
	for _, win := range f.windows {
		w("  fault window: %s, %s (%s to %s)", win.what, win.to.Sub(win.from).Round(time.Millisecond), win.from.Format(time.StampMilli), win.to.Format(time.StampMilli))
	}
	w("  HPAs live in the steady state %d (%d deleted), syncs recorded %d", f.hpasSeen, f.deleted, f.syncs)
	w("  interval between two decisions of one HPA outside fault windows: p50 %s, p99 %s, max %s (%d intervals; %d across a fault window)",
		churnPercentile(f.gaps, 0.5), churnPercentile(f.gaps, 0.99), churnPercentile(f.gaps, 1), len(f.gaps), f.excused)
	// An HPA synced off its namespace's instants (created, or edited to a new generation) is
	// next due after at most 1.25 periods: longer intervals clear of the faults are ones the
	// schedule does not explain.
	late := 0
	for _, g := range f.clearGaps {
		if g > f.cfg.sync*5/4 {
			late++
		}
	}
	w("  of them clear of the faults and of 1.5 periods after each: p50 %s, p99 %s, max %s (%d intervals; %d longer than 1.25 periods)",
		churnPercentile(f.clearGaps, 0.5), churnPercentile(f.clearGaps, 0.99), churnPercentile(f.clearGaps, 1), len(f.clearGaps), late)
	w("  pod samples checked against what metrics.k8s.io had served (the test's reads, a namespace every %s: %d): %d", f.cfg.followEvery(), f.polls, f.samplesChecked)
	w("  run's writes: %d scale (each a recorded decision's, at most %s after it), %d HPA (%d within %s of the HPA's deletion); %d Lease writes, a write at most %s after the last",
		f.scaleWrites, f.maxDecisionToWrite.Round(time.Millisecond), f.hpaWrites, f.writesInGrace, churnDeleteGrace, f.leaseWrites, f.maxAfterLeaseWrite.Round(time.Millisecond))
	w("  recorded rescales written: %d up, %d down", f.ups, f.downs)
	return b.String()
}

func churnPercentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))].Round(time.Millisecond)
}

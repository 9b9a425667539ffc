//go:build e2e && fidelity

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
	"github.com/kubectl-hpa/kubectl-hpa/test/fidelity"
)

// fidelityOutEnv names the directory the recordings are written to (make record-fidelity sets
// plugin/sim/testdata/upstream); unset, they go to the test's temporary directory.
const fidelityOutEnv = "KUBECTL_HPA_FIDELITY_OUT"

// The cluster's parameters for the recordings: upstream's defaults where a recording of a few
// minutes can afford them (sync period, tolerance, initial readiness delay, metrics-server's
// manifest's resolution), shorter windows where it cannot.
const (
	fidSyncPeriod             = 15 * time.Second
	fidMetricResolution       = 15 * time.Second
	fidDownscaleStabilization = time.Minute
	fidCPUInitPeriod          = 2 * time.Minute
	fidInitialReadinessDelay  = 30 * time.Second
	fidTolerance              = 0.1
	// fidPodReadyDelay is the harness's default (Config.PodReadyDelay).
	fidPodReadyDelay = time.Second
	fidMemoryBytes   = 128 << 20
)

func fidControllerManagerArgs() []string {
	return []string{
		"--horizontal-pod-autoscaler-sync-period=" + fidSyncPeriod.String(),
		"--horizontal-pod-autoscaler-downscale-stabilization=" + fidDownscaleStabilization.String(),
		"--horizontal-pod-autoscaler-cpu-initialization-period=" + fidCPUInitPeriod.String(),
		"--horizontal-pod-autoscaler-initial-readiness-delay=" + fidInitialReadinessDelay.String(),
		fmt.Sprintf("--horizontal-pod-autoscaler-tolerance=%g", fidTolerance),
	}
}

type fidStep struct {
	at       time.Duration
	cpuMilli int64
}

type fidScenario struct {
	name, about string
	replicas    int32
	// age is how long the Deployment's pods run (at the first load) before the HPA is created.
	age      time.Duration
	min, max int32
	behavior *autoscalingv2.HorizontalPodAutoscalerBehavior
	// loads: the first (at 0) is set before the Deployment exists.
	loads    []fidStep
	duration time.Duration
}

func fidScenarios() []fidScenario {
	i32 := func(v int32) *int32 { return &v }
	maxPolicy, minPolicy := autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect
	return []fidScenario{{
		name:  "no-behavior",
		about: "no behavior: upstream's default scale-up policies (4 pods or 100% per 15s) and kcm's downscale stabilization; pods younger than the CPU initialization period throughout",
		// 45s: two scrapes of every pod at its share before the HPA's first sync.
		replicas: 2, age: 45 * time.Second, min: 1, max: 12,
		loads:    []fidStep{{0, 100}, {45 * time.Second, 700}, {210 * time.Second, 150}, {360 * time.Second, 520}},
		duration: 8 * time.Minute,
	}, {
		name:     "behavior-policies",
		about:    "behavior: scale-up by Pods 2/30s or Percent 50/30s (Max), scale-down by Percent 50/30s or Pods 1/15s (Min) after a 60s window",
		replicas: 2, age: 45 * time.Second, min: 1, max: 12,
		behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: i32(0), SelectPolicy: &maxPolicy,
				Policies: []autoscalingv2.HPAScalingPolicy{
					{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 30},
					{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 30},
				},
			},
			ScaleDown: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: i32(60), SelectPolicy: &minPolicy,
				Policies: []autoscalingv2.HPAScalingPolicy{
					{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 30},
					{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 15},
				},
			},
		},
		loads:    []fidStep{{0, 100}, {30 * time.Second, 1000}, {240 * time.Second, 140}},
		duration: 8 * time.Minute,
	}, {
		name:  "old-pods",
		about: "the Deployment's pods older than the CPU initialization period when the load rises; the pods added after are younger",
		// The CPU initialization period plus two scrapes.
		replicas: 4, age: fidCPUInitPeriod + 35*time.Second, min: 2, max: 16,
		loads:    []fidStep{{0, 160}, {30 * time.Second, 400}, {180 * time.Second, 700}, {330 * time.Second, 100}},
		duration: 8 * time.Minute,
	}}
}

// TestRecordFidelity records upstream kube-controller-manager's HPA controller under the
// scripted loads of fidScenarios, side by side in namespaces of their own, for plugin/sim's
// fidelity test (make record-fidelity; not part of make test).
func TestRecordFidelity(t *testing.T) {
	ctx := context.Background()
	t0 := time.Now()
	if err := shared.RestartControllerManagerWith(ctx, true, fidControllerManagerArgs()...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := shared.RestartControllerManager(ctx, false); err != nil {
			t.Errorf("turning the upstream HPA controller off again: %v", err)
		}
	})
	if err := shared.RestartMetricsServer(ctx, fidMetricResolution); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := shared.RestartMetricsServer(ctx, 10*time.Second); err != nil {
			t.Errorf("restoring metrics-server's resolution: %v", err)
		}
	})
	t.Logf("kube-controller-manager and metrics-server restarted in %.1fs", time.Since(t0).Seconds())
	out := os.Getenv(fidelityOutEnv)
	if out == "" {
		out = t.TempDir()
	}
	for _, sc := range fidScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			rec := fidRecord(t, sc)
			path := filepath.Join(out, sc.name+".json")
			if err := fidelity.Write(path, rec); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d syncs, %d scale writes, %d pods, spec.replicas %v; wrote %s",
				sc.name, len(rec.SyncsMs), len(rec.ScaleWrites), len(rec.Pods), fidelity.Values(fidelity.RunLength(rec.PerSecond)), path)
		})
	}
}

// fidWatch collects what informers on one namespace see, each event stamped when it arrived.
type fidWatch struct {
	mu       sync.Mutex
	deploy   []fidSeen[int32]
	statuses []fidSeen[autoscalingv2.HorizontalPodAutoscalerStatus]
	pods     map[string]*fidPod
	order    []string
}

type fidSeen[T any] struct {
	at time.Time
	v  T
}

type fidPod struct {
	created, started, ready time.Time
	seenCreated, seenReady  time.Time
	deleting, gone          time.Time
}

func (w *fidWatch) pod(name string) *fidPod {
	p, ok := w.pods[name]
	if !ok {
		p = &fidPod{}
		w.pods[name] = p
		w.order = append(w.order, name)
	}
	return p
}

func (w *fidWatch) onPod(obj any, gone bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.pod(pod.Name)
	if p.seenCreated.IsZero() {
		p.seenCreated, p.created = now, pod.CreationTimestamp.Time
	}
	if st := pod.Status.StartTime; st != nil && p.started.IsZero() {
		p.started = st.Time
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.seenReady.IsZero() {
			p.seenReady, p.ready = now, c.LastTransitionTime.Time
		}
	}
	if pod.DeletionTimestamp != nil && p.deleting.IsZero() {
		p.deleting = now
	}
	if gone && p.gone.IsZero() {
		p.gone = now
	}
}

func fidStartWatch(t *testing.T, ctx context.Context, ns string) *fidWatch {
	w := &fidWatch{pods: map[string]*fidPod{}}
	f := informers.NewSharedInformerFactoryWithOptions(shared.Client(), 0, informers.WithNamespace(ns))
	add := func(h cache.ResourceEventHandlerFuncs, inf cache.SharedIndexInformer) {
		if _, err := inf.AddEventHandler(h); err != nil {
			t.Fatal(err)
		}
	}
	add(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { w.onPod(o, false) },
		UpdateFunc: func(_, o any) { w.onPod(o, false) },
		DeleteFunc: func(o any) { w.onPod(o, true) },
	}, f.Core().V1().Pods().Informer())
	onDeploy := func(o any) {
		d, ok := o.(*appsv1.Deployment)
		if !ok || d.Spec.Replicas == nil {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		if n := len(w.deploy); n == 0 || w.deploy[n-1].v != *d.Spec.Replicas {
			w.deploy = append(w.deploy, fidSeen[int32]{now, *d.Spec.Replicas})
		}
	}
	add(cache.ResourceEventHandlerFuncs{AddFunc: onDeploy, UpdateFunc: func(_, o any) { onDeploy(o) }}, f.Apps().V1().Deployments().Informer())
	onHPA := func(o any) {
		h, ok := o.(*autoscalingv2.HorizontalPodAutoscaler)
		if !ok {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		w.statuses = append(w.statuses, fidSeen[autoscalingv2.HorizontalPodAutoscalerStatus]{now, *h.Status.DeepCopy()})
	}
	add(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, o any) { onHPA(o) }}, f.Autoscaling().V2().HorizontalPodAutoscalers().Informer())
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	return w
}

// fidRecord plays one scenario against the upstream controller and returns what happened.
func fidRecord(t *testing.T, sc fidScenario) *fidelity.Recording {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := namespace(t, "fid-"+sc.name)
	w := fidStartWatch(t, ctx, ns)
	sel := map[string]string{"app": "web"}
	wl := cluster.Workload{Namespace: ns, Selector: sel}
	firstLoad := time.Now()
	shared.Load().Set(wl, cluster.Load{CPUMilli: sc.loads[0].cpuMilli, MemoryBytes: fidMemoryBytes})
	dep := deploymentSpec{replicas: sc.replicas}
	createDeployment(t, ns, dep)
	var oldest time.Time
	for _, p := range podsOf(t, ns, sel) {
		if st := p.Status.StartTime; st != nil && (oldest.IsZero() || st.Time.Before(oldest)) {
			oldest = st.Time
		}
	}
	time.Sleep(time.Until(oldest.Add(sc.age)))

	// Scrapes of the one node, polled: the load model notes each as metrics-server takes it.
	var scrapeMu sync.Mutex
	var scrapes []time.Time
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			at := shared.Load().LastScrape("node-1")
			scrapeMu.Lock()
			if n := len(scrapes); !at.IsZero() && (n == 0 || at.After(scrapes[n-1])) {
				scrapes = append(scrapes, at)
			}
			scrapeMu.Unlock()
		}
	}()

	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	hpa := (hpaSpec{min: sc.min, max: sc.max}).build(ns)
	hpa.Spec.Behavior = sc.behavior
	spec := *hpa.Spec.DeepCopy()
	start := time.Now()
	if _, err := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	loads := []fidelity.LoadStep{{ScriptMs: 0, AtMs: ms(firstLoad, start), CPUMilli: sc.loads[0].cpuMilli}}
	for _, step := range sc.loads[1:] {
		time.Sleep(time.Until(start.Add(step.at)))
		at := time.Now()
		shared.Load().Set(wl, cluster.Load{CPUMilli: step.cpuMilli, MemoryBytes: fidMemoryBytes})
		loads = append(loads, fidelity.LoadStep{ScriptMs: step.at.Milliseconds(), AtMs: ms(at, start), CPUMilli: step.cpuMilli})
	}
	time.Sleep(time.Until(start.Add(sc.duration)))
	end := time.Now()
	// The audit log has what kcm asked; let the last requests reach it.
	time.Sleep(time.Second)

	rec := &fidelity.Recording{
		Version: fidelity.Version, Scenario: sc.name, About: sc.about, Start: start,
		DurationMs: ms(end, start), HPA: spec, Loads: loads,
		Cluster: fidelity.Cluster{
			Kubernetes: "v1.37.2", MetricsServer: "v0.8.0", ControllerManagerArgs: fidControllerManagerArgs(),
			SyncPeriodMs: fidSyncPeriod.Milliseconds(), MetricResolutionMs: fidMetricResolution.Milliseconds(),
			DownscaleStabilizationMs: fidDownscaleStabilization.Milliseconds(), CPUInitializationPeriodMs: fidCPUInitPeriod.Milliseconds(),
			InitialReadinessDelayMs: fidInitialReadinessDelay.Milliseconds(), Tolerance: fidTolerance,
			PodReadyDelayMs: fidPodReadyDelay.Milliseconds(),
			LoadModel:       "test/e2e/cluster LoadModel: the total split evenly over Ready pods in whole millicores (integer division), at least 1m per pod; counters integrated exactly, served in milliseconds",
		},
		Workload: fidelity.Workload{InitialReplicas: sc.replicas, CPURequestMilli: 100, MemoryRequestBytes: 64 << 20, MemoryBytes: fidMemoryBytes},
	}
	reqs, err := shared.AuditSince(mark, cluster.AuditFilter{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	var writes []time.Time
	for _, r := range reqs {
		if !strings.HasSuffix(r.UserAgent, "/horizontal-pod-autoscaler") || r.Received.After(end) {
			continue
		}
		switch {
		case r.APIGroup == "metrics.k8s.io" && r.Resource == "pods" && r.Verb == "list":
			rec.SyncsMs = append(rec.SyncsMs, ms(r.Received, start))
		case r.Resource == "deployments" && r.Subresource == "scale" && r.Verb == "update":
			writes = append(writes, r.Received)
		}
	}
	cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.deploy {
		if d.at.After(end) {
			break
		}
		rec.Replicas = append(rec.Replicas, fidelity.ReplicasAt{AtMs: ms(d.at, start), Replicas: d.v})
	}
	at := func(t time.Time) int32 {
		v := rec.Replicas[0].Replicas
		for _, r := range rec.Replicas {
			if r.AtMs > ms(t, start) {
				break
			}
			v = r.Replicas
		}
		return v
	}
	for _, wr := range writes {
		// The write's value is the first change the watch saw after it was received.
		v := int32(-1)
		for _, r := range rec.Replicas {
			if r.AtMs >= ms(wr, start) {
				v = r.Replicas
				break
			}
		}
		rec.ScaleWrites = append(rec.ScaleWrites, fidelity.ReplicasAt{AtMs: ms(wr, start), Replicas: v})
	}
	for s := time.Duration(0); s <= end.Sub(start); s += time.Second {
		rec.PerSecond = append(rec.PerSecond, at(start.Add(s)))
	}
	for _, s := range w.statuses {
		if s.at.After(end) {
			break
		}
		st := fidelity.Status{SeenMs: ms(s.at, start), CurrentReplicas: s.v.CurrentReplicas, DesiredReplicas: s.v.DesiredReplicas}
		for _, m := range s.v.CurrentMetrics {
			if m.Resource != nil && m.Resource.Name == corev1.ResourceCPU {
				st.Utilization = m.Resource.Current.AverageUtilization
				if q := m.Resource.Current.AverageValue; q != nil {
					v := q.MilliValue()
					st.AverageMilli = &v
				}
			}
		}
		if s.v.LastScaleTime != nil {
			v := ms(s.v.LastScaleTime.Time, start)
			st.LastScaleMs = &v
		}
		for _, c := range s.v.Conditions {
			st.Conditions = append(st.Conditions, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
		}
		rec.Statuses = append(rec.Statuses, st)
	}
	scrapeMu.Lock()
	for _, s := range scrapes {
		if s.After(end) {
			break
		}
		rec.ScrapesMs = append(rec.ScrapesMs, ms(s, start))
	}
	scrapeMu.Unlock()
	opt := func(t time.Time) *int64 {
		if t.IsZero() {
			return nil
		}
		v := ms(t, start)
		return &v
	}
	for _, name := range w.order {
		p := w.pods[name]
		rec.Pods = append(rec.Pods, fidelity.Pod{
			Name: name, CreatedMs: opt(p.created), StartedMs: opt(p.started), ReadyMs: opt(p.ready),
			SeenCreatedMs: opt(p.seenCreated), SeenReadyMs: opt(p.seenReady), DeletingMs: opt(p.deleting), GoneMs: opt(p.gone),
		})
	}
	sort.SliceStable(rec.Pods, func(i, j int) bool { return *rec.Pods[i].CreatedMs < *rec.Pods[j].CreatedMs })
	if len(rec.SyncsMs) == 0 || len(rec.Replicas) == 0 {
		t.Fatalf("%s: no syncs (%d) or no replicas seen (%d): kcm's HPA controller did not run", sc.name, len(rec.SyncsMs), len(rec.Replicas))
	}
	return rec
}

// ms is t's offset from start in whole milliseconds.
func ms(t, start time.Time) int64 { return t.Sub(start).Milliseconds() }

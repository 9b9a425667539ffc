//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// The differential fleet test of issue 42: kube-controller-manager's HPA controller keeps in
// its memory what list and explain can only infer from what the cluster keeps (the seed of an
// HPA's recommendations at the controller's first sync of it, the rescales inside a scaling
// policy's period, both lost at a restart). Over 100 HPAs in the situations where that memory
// decides, the test reads `kubectl hpa list -A -o json` and `kubectl hpa explain NAME -o json`
// and holds each HPA's decision to the one kube-controller-manager makes at its next sync of
// that HPA (the HPA's status after that sync, the sync itself and its scale write from the
// audit log), phase after phase.

// The cluster's HPA controller settings: short enough for a test of a few minutes. list and
// explain get the same (memPluginFlags).
const (
	memSyncPeriod             = 10 * time.Second
	memDownscaleStabilization = 60 * time.Second
	// memKCMUser is kube-controller-manager's user (its client certificate; the harness runs it
	// with --use-service-account-credentials=false), memHPAAgent the suffix its HPA controller's
	// client adds to its user agent.
	memKCMUser  = "e2e:kube-controller-manager"
	memHPAAgent = "/horizontal-pod-autoscaler"
	// memLease is the Lease kube-controller-manager's leader election keeps.
	memLeaseNamespace, memLeaseName = "kube-system", "kube-controller-manager"
	// restartAfterNew is when, after the new HPAs are created, kube-controller-manager restarts.
	restartAfterNew = 40 * time.Second
)

func memKCMArgs() []string {
	return []string{
		"--horizontal-pod-autoscaler-sync-period=" + memSyncPeriod.String(),
		"--horizontal-pod-autoscaler-downscale-stabilization=" + memDownscaleStabilization.String(),
		// After the harness's --leader-elect=false, so it wins: the kube-system Lease then says
		// who leads since when, the evidence of a restart. The harness's kube-controller-manager
		// is in system:masters; the default roles give system:kube-controller-manager the same
		// Lease rights (create, get and update kube-controller-manager).
		"--leader-elect=true",
	}
}

// memGroup says when a situation's HPAs are created.
type memGroup int

const (
	// memEarly: with the Deployments, before the pods have metrics.
	memEarly memGroup = iota
	// memNew: shortly before the first comparison, inside the windows their seed holds.
	memNew
)

type memHPA struct {
	name      string
	replicas  int32
	loadMilli int64
	max       int32
	behavior  *autoscalingv2.HorizontalPodAutoscalerBehavior
	// settlesAt is the size kube-controller-manager brings it to before the first comparison
	// (the test waits for it); 0 when it stays as created.
	settlesAt int32
}

type memSituation struct {
	name  string
	about string
	group memGroup
	// seedWindow is the window in which the seed of kube-controller-manager's first sync holds
	// the HPA (0: none matters): a comparison whose read came before the seed left that window
	// and whose sync after is not counted (the memory changed in between, not a disagreement).
	seedWindow time.Duration
	// movesAfterRestart: kube-controller-manager keeps rescaling these after its restart (the
	// policy's period it counted is gone), so their pods are not waited for then.
	movesAfterRestart bool
	// noEvidence marks a situation in which the cluster keeps no evidence that settles the
	// controller's memory: its disagreements are reported, not failed. None here: issue 42 names
	// these situations as ones where the evidence exists.
	noEvidence bool
	// runPersists: in the run phases, the kubectl hpa run deciding this situation's namespace
	// persists its history on the HPAs; the others keep it in memory only (--persist-history=false).
	runPersists bool
	hpas        []memHPA
	ns          string
}

func memRules(window int32, sel autoscalingv2.ScalingPolicySelect, policies ...autoscalingv2.HPAScalingPolicy) *autoscalingv2.HPAScalingRules {
	r := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window, Policies: policies}
	if sel != "" {
		r.SelectPolicy = &sel
	}
	return r
}

func memPods(v, period int32) autoscalingv2.HPAScalingPolicy {
	return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: v, PeriodSeconds: period}
}

func memPercent(v, period int32) autoscalingv2.HPAScalingPolicy {
	return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: v, PeriodSeconds: period}
}

// memSituations: pods request 100m, the target is 50% cpu, so an HPA asks for
// ceil(total load / 50m) replicas. A load of 20m a pod asks for ceil(0.4 x size).
func memSituations() []*memSituation {
	var out []*memSituation
	add := func(s *memSituation, n int, h func(i int) memHPA) {
		for i := range n {
			x := h(i)
			x.name = fmt.Sprintf("h%02d", i+1)
			if x.max == 0 {
				x.max = 12
			}
			s.hpas = append(s.hpas, x)
		}
		out = append(out, s)
	}
	sizes := func(i int, from ...int32) int32 { return from[i%len(from)] }
	add(&memSituation{
		name: "new-legacy", group: memNew, seedWindow: memDownscaleStabilization,
		about: "new, no behavior, load asks ceil(0.4 x size): the seed of the first sync holds the size for --horizontal-pod-autoscaler-downscale-stabilization (60s)",
	}, 18, func(i int) memHPA {
		r := sizes(i, 3, 4, 5)
		return memHPA{replicas: r, loadMilli: 20 * int64(r)}
	})
	add(&memSituation{
		name: "new-down-window", group: memNew, seedWindow: 90 * time.Second,
		about: "new, scaleDown window 90s, low load: held by the seed",
	}, 12, func(i int) memHPA {
		r := sizes(i, 3, 4, 5)
		return memHPA{replicas: r, loadMilli: 20 * int64(r), behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleDown: memRules(90, ""),
		}}
	})
	add(&memSituation{
		name: "new-up-window", group: memNew, seedWindow: 60 * time.Second,
		about: "new, scaleUp window 60s, load asks 2.4 x size: the seed holds the scale-up (ScaleUpStabilized)",
	}, 10, func(i int) memHPA {
		r := sizes(i, 2, 3)
		return memHPA{replicas: r, loadMilli: 120 * int64(r), behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp: memRules(60, ""),
		}}
	})
	add(&memSituation{
		name: "expired-legacy", group: memEarly, seedWindow: memDownscaleStabilization,
		about: "created a minute or more before, no behavior, low load: the seed expired and kcm scaled down to 2",
	}, 8, func(i int) memHPA {
		r := sizes(i, 3, 4, 5)
		return memHPA{replicas: r, loadMilli: 20 * int64(r), settlesAt: 2}
	})
	add(&memSituation{
		name: "expired-window", group: memEarly, seedWindow: 30 * time.Second,
		about: "created long before, scaleDown window 30s, low load: the seed expired, scaled down to 2",
	}, 8, func(i int) memHPA {
		r := sizes(i, 3, 4, 5)
		return memHPA{replicas: r, loadMilli: 20 * int64(r), settlesAt: 2, behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleDown: memRules(30, ""),
		}}
	})
	add(&memSituation{
		name: "up-once", group: memEarly,
		about: "scaleUp Pods 2 or Percent 50 per 600s, window 0, load asks 10: rescaled up inside the period, held there (ScaleUpLimit)",
	}, 12, func(i int) memHPA {
		r := sizes(i, 2, 3, 4)
		b := &autoscalingv2.HorizontalPodAutoscalerBehavior{}
		var to int32
		if i%2 == 0 {
			b.ScaleUp, to = memRules(0, "", memPods(2, 600)), r+2
		} else {
			b.ScaleUp, to = memRules(0, "", memPercent(50, 600)), int32(math.Ceil(float64(r)*1.5))
		}
		return memHPA{replicas: r, loadMilli: 500, behavior: b, settlesAt: to}
	})
	add(&memSituation{
		name: "down-once", group: memEarly,
		about: "scaleDown Pods 2 or Percent 25 per 600s, window 0, load asks 2: rescaled down inside the period, held there (ScaleDownLimit)",
	}, 12, func(i int) memHPA {
		r := sizes(i, 6, 7, 8)
		b := &autoscalingv2.HorizontalPodAutoscalerBehavior{}
		var to int32
		if i%2 == 0 {
			b.ScaleDown, to = memRules(0, "", memPods(2, 600)), r-2
		} else {
			b.ScaleDown, to = memRules(0, "", memPercent(25, 600)), int32(float64(r)*0.75)
		}
		return memHPA{replicas: r, loadMilli: 60, behavior: b, settlesAt: to}
	})
	// Pods 1/1s paces these one pod a sync; it ends long before the next sync (10s), so only a
	// read within a second of a rescale sees a limit the sync does not (not counted then).
	add(&memSituation{
		name: "up-several", group: memEarly, movesAfterRestart: true,
		about: "scaleUp Min of Pods 1/1s and Pods 4/600s, load asks 20: 3 -> 4 -> 5 -> 6 -> 7 inside the 600s period, held at 7",
	}, 6, func(int) memHPA {
		return memHPA{replicas: 3, loadMilli: 1000, settlesAt: 7, behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp: memRules(0, autoscalingv2.MinChangePolicySelect, memPods(1, 1), memPods(4, 600)),
		}}
	})
	add(&memSituation{
		name: "down-several", group: memEarly, movesAfterRestart: true,
		about: "scaleDown Min of Pods 1/1s and Pods 4/600s, load asks 2: 10 -> 9 -> 8 -> 7 -> 6 inside the 600s period, held at 6",
	}, 6, func(int) memHPA {
		return memHPA{replicas: 10, loadMilli: 60, settlesAt: 6, behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleDown: memRules(0, autoscalingv2.MinChangePolicySelect, memPods(1, 1), memPods(4, 600)),
		}}
	})
	add(&memSituation{
		name: "steady", group: memEarly, seedWindow: memDownscaleStabilization,
		about: "control: no behavior, every pod at the target; before the runs restart, the load asks ceil(0.4 x size): the seed of the restarted run's first sync holds the size",
	}, 10, func(i int) memHPA {
		r := sizes(i, 2, 3, 4)
		return memHPA{replicas: r, loadMilli: 50 * int64(r)}
	})
	// The run phases: one situation in two persists its history, the others keep it in memory.
	for i, s := range out {
		s.runPersists = i%2 == 0
	}
	return out
}

func memHPAObject(ns string, h memHPA) *autoscalingv2.HorizontalPodAutoscaler {
	one, fifty := int32(1), int32(50)
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: h.name, Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: h.name},
			MinReplicas:    &one,
			MaxReplicas:    h.max,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &fifty},
			}}},
			Behavior: h.behavior,
		},
	}
}

// memEnv is the test's own cluster and what it watches there.
type memEnv struct {
	t     *testing.T
	c     *cluster.Cluster
	k     cluster.Kubectl
	mc    metricsclient.Interface
	start time.Time
	// flags are the controller settings list and explain get (kube-controller-manager's).
	listFlags, explainFlags []string
	sits                    []*memSituation

	mu sync.Mutex
	// statuses: every status the HPA informer saw, by ns/name, when it saw it.
	statuses map[string][]memStatus
	// settle: the last pod signature of each ns/deployment and when it changed.
	sig     map[string]string
	changed map[string]time.Time
	// runDecisions: every decision the kubectl hpa runs printed, by ns/name, when it arrived.
	runDecisions map[string][]memRunDecision
}

type memRunDecision struct {
	at time.Time
	st memStatus
}

type memStatus struct {
	at               time.Time
	current, desired int32
	reasons          string
}

func (e *memEnv) since() string { return fmt.Sprintf("t+%.0fs", time.Since(e.start).Seconds()) }

func (e *memEnv) logf(format string, args ...any) {
	e.t.Helper()
	e.t.Logf("%s "+format, append([]any{e.since()}, args...)...)
}

// memStartCluster starts a cluster of the test's own (other ports than the shared one's, no
// Heapster), with kube-controller-manager's HPA controller and leader election on.
func memStartCluster(t *testing.T) (*cluster.Cluster, time.Duration) {
	t.Helper()
	t0 := time.Now()
	c := startOwnCluster(t, "memory", cluster.Config{
		EtcdPort: 23790, APIPort: 16443, KubeletPort: 20250, MetricsServerPort: 18443,
		HeapsterPort: 18082, HeapsterStandInPort: 18083, PrometheusPort: 19090,
		WithoutHeapster: true, UpstreamHPA: true, ControllerManagerArgs: memKCMArgs(),
	})
	return c, time.Since(t0)
}

func (e *memEnv) watchHPAs(ctx context.Context) {
	f := informers.NewSharedInformerFactory(e.c.Client(), 0)
	inf := f.Autoscaling().V2().HorizontalPodAutoscalers().Informer()
	on := func(o any) {
		h, ok := o.(*autoscalingv2.HorizontalPodAutoscaler)
		if !ok {
			return
		}
		var reasons []string
		for _, c := range h.Status.Conditions {
			if c.Type == autoscalingv2.AbleToScale || c.Type == autoscalingv2.ScalingLimited && c.Status == corev1.ConditionTrue {
				reasons = append(reasons, c.Reason)
			}
			if c.Type == autoscalingv2.ScalingActive && c.Status != corev1.ConditionTrue {
				reasons = append(reasons, c.Reason)
			}
		}
		s := memStatus{at: time.Now(), current: h.Status.CurrentReplicas, desired: h.Status.DesiredReplicas, reasons: strings.Join(reasons, ",")}
		e.mu.Lock()
		defer e.mu.Unlock()
		e.statuses[h.Namespace+"/"+h.Name] = append(e.statuses[h.Namespace+"/"+h.Name], s)
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: on, UpdateFunc: func(_, o any) { on(o) }}); err != nil {
		e.t.Fatal(err)
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
}

// settled polls each situation's Deployments, pods and PodMetrics once and returns what is not
// settled yet: a Deployment whose pods are not all there and Ready, or a pod without a metrics
// sample whose window starts after the last change of its Deployment's pods (a pod became ready
// or went away: the load's split changed then). skip leaves situations out of the verdict (their
// changes are still recorded).
func (e *memEnv) settled(ctx context.Context, skip func(*memSituation) bool) []string {
	now := time.Now()
	var problems []string
	for _, s := range e.sits {
		deps, err := e.c.Client().AppsV1().Deployments(s.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return []string{err.Error()}
		}
		pods, err := e.c.Client().CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return []string{err.Error()}
		}
		pms, err := e.mc.MetricsV1beta1().PodMetricses(s.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return []string{err.Error()}
		}
		windowStart := map[string]time.Time{}
		for _, pm := range pms.Items {
			windowStart[pm.Name] = pm.Timestamp.Add(-pm.Window.Duration)
		}
		byApp := map[string][]corev1.Pod{}
		for _, p := range pods.Items {
			byApp[p.Labels["app"]] = append(byApp[p.Labels["app"]], p)
		}
		for _, d := range deps.Items {
			key := s.ns + "/" + d.Name
			ps := byApp[d.Name]
			var parts []string
			allReady := true
			readySince := map[string]time.Time{}
			for _, p := range ps {
				ready := false
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
						ready = true
						readySince[p.Name] = c.LastTransitionTime.Time
					}
				}
				gone := p.DeletionTimestamp != nil
				allReady = allReady && ready && !gone
				parts = append(parts, fmt.Sprintf("%s:%t:%t", p.Name, ready, gone))
			}
			sort.Strings(parts)
			sig := fmt.Sprint(*d.Spec.Replicas, parts)
			e.mu.Lock()
			if old, ok := e.sig[key]; ok && old != sig {
				e.changed[key] = now
			}
			e.sig[key] = sig
			changed := e.changed[key]
			e.mu.Unlock()
			if skip != nil && skip(s) {
				continue
			}
			if !allReady || int32(len(ps)) != *d.Spec.Replicas {
				problems = append(problems, fmt.Sprintf("%s: %d pods of %d, not all ready", key, len(ps), *d.Spec.Replicas))
				continue
			}
			for _, p := range ps {
				ws, ok := windowStart[p.Name]
				if !ok || ws.Before(changed) || ws.Before(readySince[p.Name]) {
					problems = append(problems, fmt.Sprintf("%s: pod %s has no sample since its pods last changed", key, p.Name))
					break
				}
			}
		}
	}
	return problems
}

// waitSettled polls settled until nothing is left or bound passes; it returns what was left.
func (e *memEnv) waitSettled(ctx context.Context, bound time.Duration, skip func(*memSituation) bool, also func() string) []string {
	deadline := time.Now().Add(bound)
	for {
		left := e.settled(ctx, skip)
		if also != nil {
			if s := also(); s != "" {
				left = append(left, s)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(time.Second)
	}
}

// memSyncs are kube-controller-manager's HPA syncs and scale writes by ns/deployment, from
// the audit log: a sync begins with its GET of the target's scale.
type memSyncs struct {
	gets, writes map[string][]time.Time
}

// memJudge is the controller whose next sync each read is held to: kube-controller-manager's
// HPA controller, or the kubectl hpa runs that replace it in the run phases.
type memJudge struct {
	name string
	// syncs are its syncs (when each began) and scale writes by ns/name, from mark in the audit
	// log and, for what the log does not say, from the time after.
	syncs func(mark cluster.AuditMark, after time.Time) memSyncs
	// decision is its decision at its sync s1 of key (gets: the syncs of key).
	decision func(key string, s1 time.Time, gets []time.Time) memStatus
}

func (e *memEnv) kcmJudge() memJudge {
	return memJudge{name: "kube-controller-manager",
		syncs:    func(mark cluster.AuditMark, _ time.Time) memSyncs { return e.kcmSyncs(mark) },
		decision: e.decisionAt}
}

// runJudge: a run syncs a namespace's HPAs together, from one list of the namespace's
// PodMetrics (--metrics-reads=per-namespace), and prints each decision once made.
func (e *memEnv) runJudge(user string) memJudge {
	return memJudge{name: "kubectl hpa run",
		syncs: func(mark cluster.AuditMark, after time.Time) memSyncs {
			reqs, err := e.c.AuditSince(mark, cluster.AuditFilter{User: user})
			if err != nil {
				e.t.Fatal(err)
			}
			s := memSyncs{gets: map[string][]time.Time{}, writes: map[string][]time.Time{}}
			passes := map[string][]time.Time{}
			for _, r := range reqs {
				switch {
				case r.APIGroup == "metrics.k8s.io" && r.Resource == "pods" && r.Verb == "list" && r.Received.After(after):
					passes[r.Namespace] = append(passes[r.Namespace], r.Received)
				case r.Resource == "deployments" && r.Subresource == "scale" && r.Verb == "update" && r.Code/100 == 2:
					s.writes[r.Namespace+"/"+r.Name] = append(s.writes[r.Namespace+"/"+r.Name], r.Received)
				}
			}
			// A pass counts for an HPA when the run printed its decision before the next one.
			e.mu.Lock()
			defer e.mu.Unlock()
			for _, si := range e.sits {
				ps := passes[si.ns]
				for _, h := range si.hpas {
					key := si.ns + "/" + h.name
					for i, p := range ps {
						next := p.Add(time.Hour)
						if i+1 < len(ps) {
							next = ps[i+1]
						}
						if slices.ContainsFunc(e.runDecisions[key], func(d memRunDecision) bool { return d.at.After(p) && d.at.Before(next) }) {
							s.gets[key] = append(s.gets[key], p)
						}
					}
				}
			}
			return s
		},
		decision: func(key string, s1 time.Time, gets []time.Time) memStatus {
			s2, ok := memFirstAfter(gets, s1)
			if !ok {
				s2 = s1.Add(memSyncPeriod)
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			for _, d := range e.runDecisions[key] {
				if d.at.After(s1) && d.at.Before(s2) {
					return d.st
				}
			}
			return memStatus{desired: -1, reasons: "no decision printed"}
		}}
}

func (e *memEnv) kcmSyncs(mark cluster.AuditMark) memSyncs {
	e.t.Helper()
	reqs, err := e.c.AuditSince(mark, cluster.AuditFilter{User: memKCMUser})
	if err != nil {
		e.t.Fatal(err)
	}
	s := memSyncs{gets: map[string][]time.Time{}, writes: map[string][]time.Time{}}
	for _, r := range reqs {
		if !strings.HasSuffix(r.UserAgent, memHPAAgent) || r.Resource != "deployments" || r.Subresource != "scale" {
			continue
		}
		key := r.Namespace + "/" + r.Name
		switch {
		case r.Verb == "get":
			s.gets[key] = append(s.gets[key], r.Received)
		case r.Verb == "update" && (r.Code == 0 || r.Code < 300):
			s.writes[key] = append(s.writes[key], r.Received)
		}
	}
	return s
}

func memFirstAfter(ts []time.Time, after time.Time) (time.Time, bool) {
	for _, x := range ts {
		if x.After(after) {
			return x, true
		}
	}
	return time.Time{}, false
}

func memAnyIn(ts []time.Time, from, to time.Time) bool {
	for _, x := range ts {
		if !x.Before(from) && x.Before(to) {
			return true
		}
	}
	return false
}

// memRead is what list or explain decided for one HPA, and when it read.
type memRead struct {
	start, end time.Time
	current    int32
	desired    int32
	constraint string
	err        string
	memory     string
}

func (r memRead) String() string {
	if r.err != "" {
		return "error " + r.err
	}
	return fmt.Sprintf("%d -> %d (%s)", r.current, r.desired, r.constraint)
}

// memItem is the part of an Explanation (list's items, explain's output) the test reads: its
// own type, so that fields added to the schema do not change what it compares.
type memItem struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Error *struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"error"`
	Decision *struct {
		CurrentReplicas int32  `json:"currentReplicas"`
		DesiredReplicas int32  `json:"desiredReplicas"`
		Error           string `json:"error"`
	} `json:"decision"`
	Verdict *struct {
		Constraint string `json:"constraint"`
	} `json:"verdict"`
	// History is kept as read, to show what a disagreeing tool inferred.
	History struct {
		Memory json.RawMessage `json:"memory"`
	} `json:"history"`
}

func (it memItem) read(start, end time.Time) memRead {
	r := memRead{start: start, end: end}
	if it.Decision == nil {
		r.err = "no decision"
		if it.Error != nil {
			r.err = it.Error.Reason + ": " + it.Error.Message
		}
		return r
	}
	r.current, r.desired, r.memory = it.Decision.CurrentReplicas, it.Decision.DesiredReplicas, string(it.History.Memory)
	if it.Verdict != nil {
		r.constraint = it.Verdict.Constraint
	}
	return r
}

// memOutcome is one comparison: a tool's decision for one HPA against kube-controller-manager's
// at its next sync of that HPA.
type memOutcome struct {
	sit      *memSituation
	hpa      string
	read     memRead
	kcm      memStatus
	sync     time.Time
	excluded string // why it is not counted (the cluster moved between the read and the sync)
}

func (o memOutcome) agrees() bool { return o.read.err == "" && o.read.desired == o.kcm.desired }

// memPhase is one comparison of the whole fleet.
type memPhase struct {
	name  string
	judge string
	list  []memOutcome
	expl  []memOutcome
}

// memSince is where the deciding controller's memory of an HPA began: its first sync after
// `after` (in the audit log from mark) seeded it, and it remembers its rescales since.
type memSince struct {
	mark  cluster.AuditMark
	after time.Time
}

// compare reads list and explain for every HPA, then waits for the judge's next sync of each
// and compares; since says, per situation, where the judge's memory of its HPAs began.
func (e *memEnv) compare(ctx context.Context, name string, judge memJudge, since func(*memSituation) memSince) memPhase {
	e.t.Helper()
	ph := e.compareOnce(ctx, name, judge, since, nil)
	// A comparison not counted (the memory changed between the read and the sync) is made
	// once more: the second read comes a few seconds after the judge's sync, at another point
	// of its memory.
	again := map[string]bool{}
	for _, outs := range [][]memOutcome{ph.list, ph.expl} {
		for _, o := range outs {
			if o.excluded != "" {
				again[o.sit.ns+"/"+o.hpa] = true
			}
		}
	}
	if len(again) == 0 {
		return ph
	}
	e.logf("%s: %d HPAs read again, their first comparison not counted", name, len(again))
	second := e.compareOnce(ctx, name, judge, since, again)
	replace := func(first, second []memOutcome) {
		for i, o := range first {
			if o.excluded == "" {
				continue
			}
			for _, o2 := range second {
				if o2.sit == o.sit && o2.hpa == o.hpa {
					first[i] = o2
				}
			}
		}
	}
	replace(ph.list, second.list)
	replace(ph.expl, second.expl)
	return ph
}

// compareOnce reads list and explain for the HPAs in only (all when nil) and compares each
// with the judge's next sync.
func (e *memEnv) compareOnce(ctx context.Context, name string, judge memJudge, since func(*memSituation) memSince, only map[string]bool) memPhase {
	e.t.Helper()
	ph := memPhase{name: name, judge: judge.name}
	wanted := func(key string) bool { return only == nil || only[key] }
	mark, err := e.c.AuditMark()
	if err != nil {
		e.t.Fatal(err)
	}
	markTime := time.Now()
	reads := map[string]map[string]memRead{"list": {}, "explain": {}}
	start := time.Now()
	out, err := e.k.Run(ctx, append([]string{"hpa", "list", "-A", "-o", "json"}, e.listFlags...)...)
	end := time.Now()
	if err != nil {
		e.t.Fatalf("%s: list: %v", name, err)
	}
	var list struct {
		Items []memItem `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		e.t.Fatalf("%s: decoding list -o json: %v", name, err)
	}
	for _, it := range list.Items {
		if key := it.Metadata.Namespace + "/" + it.Metadata.Name; wanted(key) {
			reads["list"][key] = it.read(start, end)
		}
	}
	e.logf("%s: list -A -o json read %d HPAs in %.1fs", name, len(list.Items), end.Sub(start).Seconds())

	// explain, a few at a time: each is a kubectl and a plugin process.
	type job struct{ ns, name string }
	var jobs []job
	for _, s := range e.sits {
		for _, h := range s.hpas {
			if wanted(s.ns + "/" + h.name) {
				jobs = append(jobs, job{s.ns, h.name})
			}
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 6)
	t0 := time.Now()
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			start := time.Now()
			out, err := e.k.Run(ctx, append([]string{"hpa", "explain", j.name, "-n", j.ns, "-o", "json"}, e.explainFlags...)...)
			end := time.Now()
			var it memItem
			r := memRead{start: start, end: end}
			if jerr := json.Unmarshal([]byte(out), &it); jerr != nil {
				r.err = fmt.Sprintf("decoding explain -o json: %v (%v)", jerr, err)
			} else {
				r = it.read(start, end)
			}
			mu.Lock()
			reads["explain"][j.ns+"/"+j.name] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	e.logf("%s: %d explains in %.1fs", name, len(jobs), time.Since(t0).Seconds())

	// The controller's next sync of each HPA after each read, and 3 s for its writes to reach
	// the informer and its decision to be printed.
	deadline := time.Now().Add(3*memSyncPeriod + 10*time.Second)
	var syncs memSyncs
	for {
		syncs = judge.syncs(mark, markTime)
		pending := 0
		for _, byKey := range reads {
			for key, r := range byKey {
				s1, ok := memFirstAfter(syncs.gets[key], r.end)
				if !ok || time.Since(s1) < 3*time.Second {
					pending++
				}
			}
		}
		if pending == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	remembered := map[memSince]memSyncs{}
	for _, s := range e.sits {
		if m := since(s); remembered[m].gets == nil {
			remembered[m] = judge.syncs(m.mark, m.after)
		}
	}
	resized := e.replicaSetScalings(ctx)
	for _, tool := range []string{"list", "explain"} {
		for _, s := range e.sits {
			m := since(s)
			seeds := remembered[m]
			for _, h := range s.hpas {
				key := s.ns + "/" + h.name
				if !wanted(key) {
					continue
				}
				r, ok := reads[tool][key]
				o := memOutcome{sit: s, hpa: h.name, read: r}
				if !ok {
					o.read.err = "not in " + tool + "'s output"
				}
				s1, synced := memFirstAfter(syncs.gets[key], r.end)
				switch {
				case !synced:
					o.excluded = "no sync of " + judge.name + " after the read"
				case memAnyIn(syncs.writes[key], r.start, s1):
					o.excluded = judge.name + " rescaled it during the read"
				case memAnyIn(resized[key], r.start.Truncate(time.Second), s1.Add(time.Nanosecond)):
					// On a loaded machine the Deployment can follow a rescale seconds late: the
					// pods the sync counted are not those the read counted.
					o.excluded = "its Deployment's pods changed between the read and the sync"
				}
				if synced {
					o.sync = s1
					o.kcm = judge.decision(key, s1, syncs.gets[key])
					// The seed's edge matters only where kcm moved at that sync: held, it
					// decided as the seed would have had it.
					if s.seedWindow > 0 && o.kcm.desired != o.kcm.current {
						if seed, ok := memFirstAfter(seeds.gets[key], m.after); ok {
							edge := seed.Add(s.seedWindow)
							if r.start.Before(edge.Add(time.Second)) && s1.After(edge.Add(-time.Second)) {
								o.excluded = fmt.Sprintf("its seed (%s) left the window between the read and the sync", seed.Format("15:04:05"))
							}
						}
					}
					if w, p, ok := memPeriodEnded(h.behavior, seeds.writes[key], r.start, s1); ok && o.kcm.desired != o.kcm.current {
						o.excluded = fmt.Sprintf("its rescale at %s left a %ds policy period between the read and the sync", w.Format("15:04:05.000"), p)
					}
				}
				if tool == "list" {
					ph.list = append(ph.list, o)
				} else {
					ph.expl = append(ph.expl, o)
				}
			}
		}
	}
	return ph
}

func memSinceAll(m memSince) func(*memSituation) memSince {
	return func(*memSituation) memSince { return m }
}

// memPeriodEnded finds a rescale the controller remembers whose scaling policy period ended
// between a read that began at start and the sync s1 (a second either side: events, which the
// tools read, keep the second only): the read and the sync then had different limits.
func memPeriodEnded(b *autoscalingv2.HorizontalPodAutoscalerBehavior, writes []time.Time, start, s1 time.Time) (time.Time, int32, bool) {
	if b == nil {
		return time.Time{}, 0, false
	}
	var periods []int32
	for _, r := range []*autoscalingv2.HPAScalingRules{b.ScaleUp, b.ScaleDown} {
		if r == nil {
			continue
		}
		for _, p := range r.Policies {
			periods = append(periods, p.PeriodSeconds)
		}
	}
	for _, w := range writes {
		for _, p := range periods {
			end := w.Add(time.Duration(p) * time.Second)
			if start.Before(end.Add(time.Second)) && s1.After(end.Add(-time.Second)) {
				return w, p, true
			}
		}
	}
	return time.Time{}, 0, false
}

// decisionAt is kube-controller-manager's decision at its sync s1 of key: the last status the
// informer saw after s1 and before the next sync, or, when that sync wrote none (the status
// did not change), the last one before s1.
func (e *memEnv) decisionAt(key string, s1 time.Time, gets []time.Time) memStatus {
	s2, ok := memFirstAfter(gets, s1)
	if !ok {
		s2 = s1.Add(memSyncPeriod)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var before, after *memStatus
	for i := range e.statuses[key] {
		st := &e.statuses[key][i]
		switch {
		case !st.at.After(s1):
			before = st
		case st.at.Before(s2):
			after = st
		}
	}
	if after != nil {
		return *after
	}
	if before != nil {
		return *before
	}
	return memStatus{desired: -1, reasons: "no status seen"}
}

// report prints the table of agreement per situation and fails on any disagreement counted in
// a situation where the cluster keeps the evidence.
func (e *memEnv) report(phases []memPhase) {
	e.t.Helper()
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "PHASE\tSITUATION\tHPAS\tAGREE LIST\tAGREE EXPLAIN\tNOT COUNTED\tDISAGREEMENTS (tool: decision vs the controller's at its next sync)")
	var failures []string
	for _, ph := range phases {
		for _, s := range e.sits {
			var n, notCounted int
			agree := map[string][2]int{}
			var examples []string
			for tool, outs := range map[string][]memOutcome{"list": ph.list, "explain": ph.expl} {
				for _, o := range outs {
					if o.sit != s {
						continue
					}
					if tool == "list" {
						n++
					}
					if o.excluded != "" {
						notCounted++
						continue
					}
					a := agree[tool]
					a[1]++
					if o.agrees() {
						a[0]++
					} else {
						ex := fmt.Sprintf("%s %s: %s vs %s %d (%s)", tool, o.hpa, o.read, ph.judge, o.kcm.desired, o.kcm.reasons)
						examples = append(examples, ex)
						if !s.noEvidence {
							failures = append(failures, ph.name+" "+s.name+" "+ex)
						}
					}
					agree[tool] = a
				}
			}
			sort.Strings(examples)
			shown := examples
			if len(shown) > 3 {
				shown = append(slices.Clone(shown[:3]), fmt.Sprintf("... %d more", len(examples)-3))
			}
			name := s.name
			if s.noEvidence {
				name += " (no evidence)"
			}
			if ph.judge != "kube-controller-manager" {
				name += map[bool]string{true: " (persisted)", false: " (memory-only)"}[s.runPersists]
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%d/%d\t%d/%d\t%d\t%s\n", ph.name, name, n,
				agree["list"][0], agree["list"][1], agree["explain"][0], agree["explain"][1], notCounted, strings.Join(shown, "; "))
		}
	}
	w.Flush()
	e.t.Logf("agreement with the deciding controller (kube-controller-manager, then the kubectl hpa runs) at its next sync, per situation:\n%s", b.String())
	for _, ph := range phases {
		for _, outs := range [][]memOutcome{ph.list, ph.expl} {
			for _, o := range outs {
				if o.excluded != "" {
					e.t.Logf("%s %s/%s not counted: %s", ph.name, o.sit.name, o.hpa, o.excluded)
				}
			}
		}
	}
	if len(failures) > 0 {
		e.t.Errorf("%d decisions differ from the deciding controller's at its next sync (the cluster keeps the evidence in each of these situations):\n  %s",
			len(failures), strings.Join(failures, "\n  "))
		e.evidence(phases, 4)
	}
	// Every situation must have been compared at least once per phase by each tool.
	for _, ph := range phases {
		for _, s := range e.sits {
			for tool, outs := range map[string][]memOutcome{"list": ph.list, "explain": ph.expl} {
				counted := 0
				for _, o := range outs {
					if o.sit == s && o.excluded == "" {
						counted++
					}
				}
				if counted == 0 {
					e.t.Errorf("%s %s: no decision of %s could be compared (every one not counted)", ph.name, s.name, tool)
				}
			}
		}
	}
}

// evidence logs, for the first n disagreements of each tool, what it inferred and the events
// it inferred it from (the HPA's rescales, its Deployment's resizes), with their times.
func (e *memEnv) evidence(phases []memPhase, n int) {
	e.t.Helper()
	for _, tool := range []string{"list", "explain"} {
		e.evidenceOf(phases, tool, n)
	}
}

func (e *memEnv) evidenceOf(phases []memPhase, tool string, n int) {
	e.t.Helper()
	ctx := context.Background()
	for _, ph := range phases {
		outs := ph.expl
		if tool == "list" {
			outs = ph.list
		}
		for _, o := range outs {
			if n == 0 {
				return
			}
			if o.excluded != "" || o.agrees() || o.sit.noEvidence {
				continue
			}
			n--
			var lines []string
			evs, err := e.c.Client().CoreV1().Events(o.sit.ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				lines = append(lines, err.Error())
			} else {
				for _, ev := range evs.Items {
					if ev.InvolvedObject.Name != o.hpa || (ev.Reason != "SuccessfulRescale" && ev.Reason != "ScalingReplicaSet") {
						continue
					}
					lines = append(lines, fmt.Sprintf("%s %s/%s %s x%d first %s last %s event %s: %s", ev.Source.Component+ev.ReportingController, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Reason, ev.Count,
						ev.FirstTimestamp.Format("15:04:05"), ev.LastTimestamp.Format("15:04:05"), ev.EventTime.Format("15:04:05.000"), ev.Message))
				}
			}
			sort.Strings(lines)
			e.t.Logf("%s %s/%s: %s read %s-%s, inferred memory %s\n  %s", ph.name, o.sit.name, o.hpa, tool,
				o.read.start.Format("15:04:05.000"), o.read.end.Format("15:04:05.000"), o.read.memory, strings.Join(lines, "\n  "))
		}
	}
}

// replicaSetScalings are the times (to the second, as events keep them) at which each
// situation's Deployments scaled a ReplicaSet, by namespace/name.
func (e *memEnv) replicaSetScalings(ctx context.Context) map[string][]time.Time {
	out := map[string][]time.Time{}
	for _, s := range e.sits {
		evs, err := e.c.Client().CoreV1().Events(s.ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=ScalingReplicaSet"})
		if err != nil {
			e.t.Fatalf("listing the ReplicaSet scalings of %s: %v", s.ns, err)
		}
		for _, ev := range evs.Items {
			key := s.ns + "/" + ev.InvolvedObject.Name
			for _, t := range []metav1.Time{ev.FirstTimestamp, ev.LastTimestamp} {
				if !t.IsZero() {
					out[key] = append(out[key], t.Time)
				}
			}
		}
	}
	for k := range out {
		slices.SortFunc(out[k], time.Time.Compare)
	}
	return out
}

func (e *memEnv) lease(ctx context.Context) string {
	l, err := e.c.Client().CoordinationV1().Leases(memLeaseNamespace).Get(ctx, memLeaseName, metav1.GetOptions{})
	if err != nil {
		return "Lease: " + err.Error()
	}
	ts := func(t *metav1.MicroTime) string {
		if t == nil {
			return "<nil>"
		}
		return t.Format("15:04:05.000")
	}
	return fmt.Sprintf("Lease %s/%s: holderIdentity %s, acquireTime %s, renewTime %s, leaseTransitions %d",
		memLeaseNamespace, memLeaseName, ptrString(l.Spec.HolderIdentity), ts(l.Spec.AcquireTime), ts(l.Spec.RenewTime), ptrInt32(l.Spec.LeaseTransitions))
}

func ptrString(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func ptrInt32(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// pluginFlags gives list and explain kube-controller-manager's settings, and --sync-period
// where the command takes it without --watch.
func (e *memEnv) pluginFlags(ctx context.Context) {
	base := []string{"--downscale-stabilization=" + memDownscaleStabilization.String()}
	sp := "--sync-period=" + memSyncPeriod.String()
	e.listFlags, e.explainFlags = base, base
	if _, err := e.k.Run(ctx, "hpa", "list", "-A", "-o", "json", sp); err == nil {
		e.listFlags = append(slices.Clone(base), sp)
	}
	_, err := e.k.Run(ctx, "hpa", "explain", "mem-probe", "-n", "default", "-o", "json", sp)
	if err == nil || !strings.Contains(err.Error(), "sync-period") {
		e.explainFlags = append(slices.Clone(base), sp)
	}
	e.logf("list flags %v, explain flags %v", e.listFlags, e.explainFlags)
}

// memRunUser is the user the kubectl hpa runs act as, so that the audit log tells their
// requests from list's and explain's.
const memRunUser = "e2e:mem-run"

// startRuns starts one kubectl hpa run per situation's namespace, with kube-controller-manager's
// settings, persisting the history where the situation says so; each decision it prints is kept
// in e.runDecisions. The returned stop ends them all (Ctrl-C: each releases its Lease).
func (e *memEnv) startRuns(k cluster.Kubectl) (stop func()) {
	e.t.Helper()
	var stops []func()
	for _, s := range e.sits {
		args := append([]string{"hpa", "run", "-n", s.ns, "-o", "json", "--sync-period=" + memSyncPeriod.String(),
			"--downscale-stabilization=" + memDownscaleStabilization.String(),
			// kube-controller-manager wrote these HPAs' status a moment ago: it has stopped.
			"--force-ownership"}, histLease...)
		if !s.runPersists {
			args = append(args, "--persist-history=false")
		}
		stops = append(stops, e.startRun(k, s.ns, args))
	}
	return func() {
		var wg sync.WaitGroup
		for _, stop := range stops {
			wg.Go(stop)
		}
		wg.Wait()
	}
}

func (e *memEnv) startRun(k cluster.Kubectl, ns string, args []string) (stop func()) {
	e.t.Helper()
	return startRunLines(e.t, k, ns, args, func(at time.Time, line []byte) {
		var it memItem
		if err := json.Unmarshal(line, &it); err != nil || it.Decision == nil {
			return
		}
		st := memStatus{at: at, current: it.Decision.CurrentReplicas, desired: it.Decision.DesiredReplicas}
		if it.Verdict != nil {
			st.reasons = it.Verdict.Constraint
		}
		key := it.Metadata.Namespace + "/" + it.Metadata.Name
		e.mu.Lock()
		e.runDecisions[key] = append(e.runDecisions[key], memRunDecision{at: at, st: st})
		e.mu.Unlock()
	})
}

// runSyncedSince says which HPA no run has decided since t, "" when every one has.
func (e *memEnv) runSyncedSince(t time.Time) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.sits {
		for _, h := range s.hpas {
			ds := e.runDecisions[s.ns+"/"+h.name]
			if len(ds) == 0 || !ds[len(ds)-1].at.After(t) {
				return s.name + "/" + h.name + " not decided by its run yet"
			}
		}
	}
	return ""
}

// TestMemoryListAndExplainDecideAsKubeControllerManagerAtItsNextSync is issue 42's gate: on a
// cluster of its own (kube-controller-manager's HPA controller, leader election on, sync period
// 10s, downscale stabilization 60s), 102 HPAs in 10 situations where the controller's memory
// decides (new HPAs inside the window their first sync's seed holds, and older ones whose seed
// expired; one and several rescales inside a scaling policy's period, up and down; a control),
// each on its own Deployment. Phase "fleet": list and explain against kube-controller-manager's
// next sync of each HPA. Phase "restart": kube-controller-manager restarted (a new leader: the
// Lease changes hands after the old one's expires), every HPA reseeded at the new leader's first
// sync and the policies' periods forgotten; compared again. Phase "run-start":
// kube-controller-manager's HPA controller off, a kubectl hpa run per namespace decides in its
// place (every other one persisting its history on the HPAs, the others memory-only), compared
// against each run's next decision. Phase "run-restart": every run stopped with Ctrl-C and
// started again (the memory-only ones seed every HPA and forget the policies' periods, the
// persisting ones restore them), compared again. The load of each Deployment is constant (but
// steady's, lowered before the runs restart) and every pod has a metrics sample after its
// Deployment's last change when a phase reads, so what differs between a read and the sync
// after it is the controller's memory.
func TestMemoryListAndExplainDecideAsKubeControllerManagerAtItsNextSync(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Now()
	c, startTook := memStartCluster(t)
	mc, err := metricsclient.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	e := &memEnv{
		t: t, c: c, mc: mc, start: time.Now(), sits: memSituations(),
		k:        c.Kubectl(c.PluginKubeconfig(), os.Getenv(pluginDirEnv)),
		statuses: map[string][]memStatus{}, sig: map[string]string{}, changed: map[string]time.Time{},
		runDecisions: map[string][]memRunDecision{},
	}
	e.logf("own cluster started in %.1fs", startTook.Seconds())
	e.watchHPAs(ctx)
	e.pluginFlags(ctx)
	testStart, err := c.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	e.logf("%s", e.lease(ctx))

	// The Deployments and their loads, all at once; the early HPAs beside them.
	total := 0
	for _, s := range e.sits {
		if s.ns, err = c.CreateNamespace(ctx, "mem-"+s.name); err != nil {
			t.Fatal(err)
		}
		for _, h := range s.hpas {
			total++
			d := deploymentSpec{name: h.name, replicas: h.replicas}.build(s.ns)
			if _, err := c.Client().AppsV1().Deployments(s.ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			c.Load().Set(cluster.Workload{Namespace: s.ns, Selector: map[string]string{"app": h.name}},
				cluster.Load{CPUMilli: h.loadMilli, MemoryBytes: int64(h.replicas) * 64 << 20})
		}
	}
	create := func(g memGroup) {
		for _, s := range e.sits {
			if s.group != g {
				continue
			}
			for _, h := range s.hpas {
				if _, err := c.Client().AutoscalingV2().HorizontalPodAutoscalers(s.ns).Create(ctx, memHPAObject(s.ns, h), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	create(memEarly)
	tEarly := time.Now()
	e.logf("%d Deployments in %d situations created, the early HPAs beside them", total, len(e.sits))
	if total < 100 {
		t.Fatalf("%d HPAs, want at least 100", total)
	}

	// The early HPAs reach their sizes (the policies' rescales, the expired seeds' scale-down:
	// the legacy window is 60s from the first sync), then the new ones are created.
	sizes := func() string {
		var off []string
		for _, s := range e.sits {
			for _, h := range s.hpas {
				if h.settlesAt == 0 {
					continue
				}
				sc, err := c.Client().AppsV1().Deployments(s.ns).GetScale(ctx, h.name, metav1.GetOptions{})
				if err != nil {
					return err.Error()
				}
				if sc.Spec.Replicas != h.settlesAt {
					off = append(off, fmt.Sprintf("%s/%s %d (want %d)", s.name, h.name, sc.Spec.Replicas, h.settlesAt))
				}
			}
		}
		if len(off) > 0 {
			return fmt.Sprintf("%d not at their size yet: %s", len(off), strings.Join(off[:min(len(off), 5)], ", "))
		}
		return ""
	}
	time.Sleep(time.Until(tEarly.Add(memDownscaleStabilization + 5*time.Second)))
	if left := e.waitSettled(ctx, 90*time.Second, func(s *memSituation) bool { return s.group == memNew }, sizes); len(left) > 0 {
		t.Fatalf("the early HPAs did not settle: %s", strings.Join(left[:min(len(left), 10)], "; "))
	}
	e.logf("the early HPAs are at their sizes, every pod sampled since")
	create(memNew)
	tNew := time.Now()
	synced := func() string {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, s := range e.sits {
			for _, h := range s.hpas {
				st := e.statuses[s.ns+"/"+h.name]
				if len(st) == 0 || st[len(st)-1].reasons == "" {
					return s.name + "/" + h.name + " has no status from kube-controller-manager yet"
				}
			}
		}
		return ""
	}
	if left := e.waitSettled(ctx, 30*time.Second, nil, synced); len(left) > 0 {
		t.Fatalf("before the first comparison: %s", strings.Join(left[:min(len(left), 10)], "; "))
	}
	e.logf("the new HPAs created %.0fs ago, every HPA synced once", time.Since(tNew).Seconds())

	var phases []memPhase
	fleet := e.compare(ctx, "fleet", e.kcmJudge(), memSinceAll(memSince{mark: testStart}))
	phases = append(phases, fleet)
	e.logf("phase fleet compared; the new HPAs' seeds are %.0fs old", time.Since(tNew).Seconds())
	if late := time.Since(tNew); late > memDownscaleStabilization-5*time.Second {
		t.Logf("warning: restarting kube-controller-manager %.0fs after the new HPAs were created: the old leader may have let their seeds go", late.Seconds())
	}
	// Restarting later leaves the restart phase's reads well inside the new leader's seed
	// window: restarted sooner, a slow machine's reads straddled the seeds' expiry.
	time.Sleep(time.Until(tNew.Add(restartAfterNew)))

	// Restart: SIGTERM; the new process takes the Lease once the old one's expires, and its
	// HPA controller seeds every HPA at its first sync.
	before := e.lease(ctx)
	oldLease, err := c.Client().CoordinationV1().Leases(memLeaseNamespace).Get(ctx, memLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restartMark, err := c.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	tRestart := time.Now()
	if err := c.RestartControllerManager(ctx, true); err != nil {
		t.Fatal(err)
	}
	// The old process has exited and the new one runs: every sync from now on is the new one's.
	tStarted := time.Now()
	var tLeader time.Time
	eventually(t, 60*time.Second, "a new kube-controller-manager leads", func(ctx context.Context) error {
		l, err := c.Client().CoordinationV1().Leases(memLeaseNamespace).Get(ctx, memLeaseName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ptrString(l.Spec.HolderIdentity) == ptrString(oldLease.Spec.HolderIdentity) {
			return fmt.Errorf("still held by %s", ptrString(l.Spec.HolderIdentity))
		}
		tLeader = time.Now()
		return nil
	})
	e.logf("kube-controller-manager restarted; new leader after %.1fs\n  before: %s\n  after:  %s", tLeader.Sub(tRestart).Seconds(), before, e.lease(ctx))
	firstSyncs := func() string {
		s := e.kcmSyncs(restartMark)
		for _, si := range e.sits {
			for _, h := range si.hpas {
				if _, ok := memFirstAfter(s.gets[si.ns+"/"+h.name], tStarted); !ok {
					return si.name + "/" + h.name + " not synced by the new leader yet"
				}
			}
		}
		return ""
	}
	// The original seeds of the new HPAs expire before the comparison, so only the new leader's
	// hold them.
	time.Sleep(time.Until(tNew.Add(memDownscaleStabilization + 5*time.Second)))
	if left := e.waitSettled(ctx, 40*time.Second, func(s *memSituation) bool { return s.movesAfterRestart }, firstSyncs); len(left) > 0 {
		t.Logf("after the restart, not settled (compared anyway): %s", strings.Join(left[:min(len(left), 10)], "; "))
	}
	e.logf("after the restart: every HPA synced by the new leader, the new HPAs' first seeds %.0fs old", time.Since(tNew).Seconds())
	if events, err := c.Client().CoreV1().Events(memLeaseNamespace).List(ctx, metav1.ListOptions{}); err == nil {
		for _, ev := range events.Items {
			if ev.Reason == "LeaderElection" {
				t.Logf("event %s %s/%s: %s (%s)", ev.Reason, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Message, ev.LastTimestamp.Format("15:04:05"))
			}
		}
	}
	phases = append(phases, e.compare(ctx, "restart", e.kcmJudge(), memSinceAll(memSince{restartMark, tStarted})))

	// The run phases: kube-controller-manager without its HPA controller, and in its place a
	// kubectl hpa run per namespace, every other one persisting its history. Compared when the
	// runs have decided every HPA, and again after every run restarted.
	if err := c.RestartControllerManagerWith(ctx, false, memKCMArgs()...); err != nil {
		t.Fatal(err)
	}
	runKubeconfig, err := c.KubeconfigFor(memRunUser)
	if err != nil {
		t.Fatal(err)
	}
	rk := c.Kubectl(runKubeconfig, os.Getenv(pluginDirEnv))
	runs := e.runJudge(memRunUser)
	runsMark, err := c.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	tRuns := time.Now()
	stopRuns := e.startRuns(rk)
	notMoving := func(s *memSituation) bool { return s.movesAfterRestart }
	if left := e.waitSettled(ctx, 60*time.Second, notMoving, func() string { return e.runSyncedSince(tRuns) }); len(left) > 0 {
		t.Logf("after the runs started, not settled (compared anyway): %s", strings.Join(left[:min(len(left), 10)], "; "))
	}
	e.logf("kube-controller-manager's HPA controller stopped; a kubectl hpa run per namespace has decided every HPA\n  %s", e.lease(ctx))
	phases = append(phases, e.compare(ctx, "run-start", runs, memSinceAll(memSince{runsMark, tRuns})))

	// steady's load drops to ceil(0.4 x size) before the runs restart: its run, memory-only,
	// seeds it with its size at the restart and holds it there for the 60s window.
	for _, s := range e.sits {
		if s.name != "steady" {
			continue
		}
		for _, h := range s.hpas {
			c.Load().Set(cluster.Workload{Namespace: s.ns, Selector: map[string]string{"app": h.name}},
				cluster.Load{CPUMilli: 20 * int64(h.replicas), MemoryBytes: int64(h.replicas) * 64 << 20})
		}
	}
	time.Sleep(25 * time.Second)
	stopRuns()
	restartRunsMark, err := c.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	tRestartRuns := time.Now()
	stopRuns = e.startRuns(rk)
	if left := e.waitSettled(ctx, 30*time.Second, notMoving, func() string { return e.runSyncedSince(tRestartRuns) }); len(left) > 0 {
		t.Logf("after the runs restarted, not settled (compared anyway): %s", strings.Join(left[:min(len(left), 10)], "; "))
	}
	e.logf("every kubectl hpa run restarted and has decided every HPA")
	phases = append(phases, e.compare(ctx, "run-restart", runs, func(s *memSituation) memSince {
		// A run that persists its history goes on from its record, begun at its first start.
		if s.runPersists {
			return memSince{runsMark, tRuns}
		}
		return memSince{restartRunsMark, tRestartRuns}
	}))
	stopRuns()
	e.report(phases)
	t.Logf("wall time %.0fs (own cluster start %.1fs)", time.Since(t0).Seconds(), startTook.Seconds())
}

package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/clock"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history/annotation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/monitor"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild/fakemetrics"
)

func webPods() []*corev1.Pod { return []*corev1.Pod{newPod("web-1", "web"), newPod("web-2", "web")} }

func TestReconcile(t *testing.T) {
	busy := func() *fakemetrics.Client { return cpuMetrics(cpuAt(100, "web-1", "web-2")) } // 100% vs 50% target
	calm := func() *fakemetrics.Client { return cpuMetrics(cpuAt(50, "web-1", "web-2")) }  // on target
	type want struct {
		scaleActions []string
		kubeActions  []string
		events       []string // "Type Reason" prefixes
		ableToScale  string   // condition on the stored HPA after the reconcile
		dryRunReason string   // substring
		err          bool
	}
	cases := []struct {
		name    string
		opts    func(*Options)
		hpa     *autoscalingv2.HorizontalPodAutoscaler
		metrics *fakemetrics.Client
		setup   func(*fixture)
		want    want
	}{
		{
			name: "overloaded target gets exactly one scale update and one status write",
			hpa:  newHPA("web"), metrics: busy(),
			want: want{
				scaleActions: []string{"get deployments/scale web", "update deployments/scale web replicas=4 dryRun=[]"},
				kubeActions:  []string{"update horizontalpodautoscalers/status dryRun=[]"},
				events:       []string{"Normal SuccessfulRescale New size: 4; reason: cpu resource utilization (percentage of request) above target"},
				ableToScale:  "True/SucceededRescale",
			},
		},
		{
			name: "dry-run client sends no write at all and records no event",
			opts: func(o *Options) { o.DryRun = DryRunClient },
			hpa:  newHPA("web"), metrics: busy(),
			want: want{
				scaleActions: []string{"get deployments/scale web"},
				ableToScale:  "absent",
				dryRunReason: "--dry-run=client",
			},
		},
		{
			name: "dry-run server sends every write with dryRun=All and records no event",
			opts: func(o *Options) { o.DryRun = DryRunServer },
			hpa:  newHPA("web"), metrics: busy(),
			want: want{
				scaleActions: []string{"get deployments/scale web", "update deployments/scale web replicas=4 dryRun=[All]"},
				kubeActions:  []string{"update horizontalpodautoscalers/status dryRun=[All]"},
				ableToScale:  "True/SucceededRescale",
				dryRunReason: "--dry-run=server",
			},
		},
		{
			name: "target on target metric: no scale write, status written once for the new conditions",
			hpa:  newHPA("web"), metrics: calm(),
			want: want{
				scaleActions: []string{"get deployments/scale web"},
				kubeActions:  []string{"update horizontalpodautoscalers/status dryRun=[]"},
				ableToScale:  "True/ReadyForNewScale",
			},
		},
		{
			name: "conflict on the scale update is retried after re-reading the scale",
			hpa:  newHPA("web"), metrics: busy(),
			setup: func(f *fixture) { f.scales.conflicts = 1 },
			want: want{
				scaleActions: []string{"get deployments/scale web",
					"update deployments/scale web replicas=4 dryRun=[]", "get deployments/scale web",
					"update deployments/scale web replicas=4 dryRun=[]"},
				kubeActions: []string{"update horizontalpodautoscalers/status dryRun=[]"},
				events:      []string{"Normal SuccessfulRescale"},
				ableToScale: "True/SucceededRescale",
			},
		},
		{
			name: "conflict on the status write is retried on a freshly read HPA",
			hpa:  newHPA("web"), metrics: calm(),
			setup: func(f *fixture) {
				conflicted := false
				f.kube.PrependReactor("update", "horizontalpodautoscalers", func(a core.Action) (bool, runtime.Object, error) {
					if a.GetSubresource() == "status" && !conflicted {
						conflicted = true
						return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}, "web", errors.New("modified"))
					}
					return false, nil, nil
				})
			},
			want: want{
				scaleActions: []string{"get deployments/scale web"},
				kubeActions:  []string{"update horizontalpodautoscalers/status dryRun=[]", "get horizontalpodautoscalers", "update horizontalpodautoscalers/status dryRun=[]"},
				ableToScale:  "True/ReadyForNewScale",
			},
		},
		{
			name: "missing target sets FailedGetScale and records a Warning event",
			hpa:  newHPA("web", testbuild.TargetName("gone")), metrics: busy(),
			want: want{
				scaleActions: []string{"get deployments/scale gone"},
				kubeActions:  []string{"update horizontalpodautoscalers/status dryRun=[]"},
				events:       []string{"Warning FailedGetScale deployments.apps \"gone\" not found"},
				ableToScale:  "False/FailedGetScale",
				err:          true,
			},
		},
		{
			name: "an HPA kube-controller-manager reconciles is left alone and the report says why",
			hpa:  newHPA("web", testbuild.StatusManager("kube-controller-manager", t0.Add(-30*time.Second))), metrics: busy(),
			want: want{
				scaleActions: []string{"get deployments/scale web"},
				ableToScale:  "absent",
				dryRunReason: "kube-controller-manager wrote this HPA's status 30s ago",
			},
		},
		{
			name: "a dry run of an HPA another manager reconciles says what happens may differ",
			opts: func(o *Options) { o.DryRun = DryRunClient },
			hpa:  newHPA("web", testbuild.StatusManager("kube-controller-manager", t0.Add(-30*time.Second))), metrics: busy(),
			want: want{
				scaleActions: []string{"get deployments/scale web"},
				ableToScale:  "absent",
				dryRunReason: "--dry-run=client; kube-controller-manager wrote this HPA's status 30s ago and scales it, so what happens may differ from this decision",
			},
		},
		{
			name: "--force-ownership writes even when another manager wrote the status",
			opts: func(o *Options) { o.ForceOwnership = true },
			hpa:  newHPA("web", testbuild.StatusManager("kube-controller-manager", t0.Add(-30*time.Second))), metrics: busy(),
			want: want{
				scaleActions: []string{"get deployments/scale web", "update deployments/scale web replicas=4 dryRun=[]"},
				kubeActions:  []string{"update horizontalpodautoscalers/status dryRun=[]"},
				events:       []string{"Normal SuccessfulRescale"},
				ableToScale:  "True/SucceededRescale",
			},
		},
		{
			name: "a status write older than the ownership window does not block writing",
			hpa:  newHPA("web", testbuild.StatusManager("kube-controller-manager", t0.Add(-time.Hour))), metrics: busy(),
			want: want{
				scaleActions: []string{"get deployments/scale web", "update deployments/scale web replicas=4 dryRun=[]"},
				kubeActions:  []string{"update horizontalpodautoscalers/status dryRun=[]"},
				events:       []string{"Normal SuccessfulRescale"},
				ableToScale:  "True/SucceededRescale",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultOptions()
			if tc.opts != nil {
				tc.opts(&opts)
			}
			f := newFixture(t, opts, []*autoscalingv2.HorizontalPodAutoscaler{tc.hpa}, webPods(), map[string]int32{"web": 2}, tc.metrics)
			if tc.setup != nil {
				tc.setup(f)
			}
			err := f.sync(t, tc.hpa.Name)
			if (err != nil) != tc.want.err {
				t.Fatalf("reconcile error = %v, want error: %v", err, tc.want.err)
			}
			if diff := cmp.Diff(tc.want.scaleActions, f.scales.recorded()); diff != "" {
				t.Errorf("scale actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want.kubeActions, f.kubeActions()); diff != "" {
				t.Errorf("API actions (-want +got):\n%s", diff)
			}
			got := f.events()
			if len(got) != len(tc.want.events) {
				t.Errorf("events = %q, want %d starting with %q", got, len(tc.want.events), tc.want.events)
			}
			for i := range min(len(got), len(tc.want.events)) {
				if !strings.HasPrefix(got[i], tc.want.events[i]) {
					t.Errorf("event %d = %q, want prefix %q", i, got[i], tc.want.events[i])
				}
			}
			if got := condition(f.storedHPA(t, tc.hpa.Name), autoscalingv2.AbleToScale); got != tc.want.ableToScale {
				t.Errorf("stored AbleToScale = %s, want %s", got, tc.want.ableToScale)
			}
			if len(f.reports) != 1 {
				t.Fatalf("got %d reports, want 1", len(f.reports))
			}
			if r := f.reports[0].DryRunReason; !strings.Contains(r, tc.want.dryRunReason) || (tc.want.dryRunReason == "") != (r == "") {
				t.Errorf("dry-run reason = %q, want %q", r, tc.want.dryRunReason)
			}
		})
	}
}

func TestReconcileSkipsStatusWriteWhenNothingChanged(t *testing.T) {
	f := newFixture(t, DefaultOptions(), []*autoscalingv2.HorizontalPodAutoscaler{newHPA("web")}, webPods(), map[string]int32{"web": 2},
		cpuMetrics(cpuAt(50, "web-1", "web-2")))
	if err := f.sync(t, "web"); err != nil {
		t.Fatal(err)
	}
	// The informer would now deliver the written status.
	written := f.storedHPA(t, "web")
	if err := f.c.hpaFactory.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetIndexer().Update(written); err != nil {
		t.Fatal(err)
	}
	f.kube.ClearActions()
	f.clock.Step(15 * time.Second)
	if err := f.sync(t, "web"); err != nil {
		t.Fatal(err)
	}
	if got := f.kubeActions(); len(got) != 0 {
		t.Errorf("second reconcile with an unchanged status made API calls %q, want none", got)
	}
}

func TestMissingTargetDoesNotStopOtherHPAs(t *testing.T) {
	hpas := []*autoscalingv2.HorizontalPodAutoscaler{newHPA("broken", testbuild.TargetName("gone")), newHPA("web")}
	f := newFixture(t, DefaultOptions(), hpas, webPods(), map[string]int32{"web": 2}, cpuMetrics(cpuAt(100, "web-1", "web-2")))
	// Drive the queue the way workers do: both keys were enqueued by the add handler.
	for range 2 {
		if !f.c.processNext(t.Context()) {
			t.Fatal("queue shut down early")
		}
	}
	if got := condition(f.storedHPA(t, "broken"), autoscalingv2.AbleToScale); got != "False/FailedGetScale" {
		t.Errorf("broken HPA AbleToScale = %s, want False/FailedGetScale", got)
	}
	if got := condition(f.storedHPA(t, "web"), autoscalingv2.AbleToScale); got != "True/SucceededRescale" {
		t.Errorf("web HPA AbleToScale = %s, want True/SucceededRescale", got)
	}
	if got := f.storedHPA(t, "web").Status.DesiredReplicas; got != 4 {
		t.Errorf("web desired = %d, want 4", got)
	}
	// Both keys are requeued for the next sync, the failed one included (no back-off).
	if got := gathered(t, f.c.Monitor(), "workqueue_retries_total"); got != 2 {
		t.Errorf("rate-limited requeues = %v, want 2", got)
	}
}

func TestOverlappingHPAsDoNotScale(t *testing.T) {
	hpas := []*autoscalingv2.HorizontalPodAutoscaler{newHPA("a"), newHPA("b")}
	f := newFixture(t, DefaultOptions(), hpas, webPods(), map[string]int32{"web": 2}, cpuMetrics(cpuAt(100, "web-1", "web-2")))
	if err := f.sync(t, "a"); err != nil {
		t.Fatalf("first HPA: %v", err)
	}
	f.events()
	if err := f.sync(t, "b"); err == nil {
		t.Fatal("second HPA over the same pods reconciled without error")
	}
	if got := condition(f.storedHPA(t, "b"), autoscalingv2.ScalingActive); got != "False/AmbiguousSelector" {
		t.Errorf("ScalingActive = %s, want False/AmbiguousSelector", got)
	}
	if got := f.reports[1].Input.OtherHPAsSelectingPods; !cmp.Equal(got, []string{"default/a"}) {
		t.Errorf("OtherHPAsSelectingPods = %q, want [default/a]", got)
	}
}

// TestDecisionsAreTimedByTheWallClockTheRecordingKeeps: a time read from the clock carries a
// monotonic reading, and two such times compare by it. The recording, the status and the
// persisted history keep the wall clock alone, so when the host steps its wall clock between
// two syncs (an NTP correction), a kept recommendation at a window's edge fell on one side for
// run and on the other for a replay of its recording. Every time a decision holds must be the
// wall clock's.
func TestDecisionsAreTimedByTheWallClockTheRecordingKeeps(t *testing.T) {
	hpa := newHPA("web", func(h *autoscalingv2.HorizontalPodAutoscaler) {
		h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
	})
	f := newFixture(t, DefaultOptions(), []*autoscalingv2.HorizontalPodAutoscaler{hpa}, webPods(), map[string]int32{"web": 2},
		cpuMetrics(cpuAt(100, "web-1", "web-2")))
	f.c.clock = clock.RealClock{}
	for range 2 {
		_ = f.sync(t, "web")
	}
	wallOnly := func(what string, at time.Time) {
		t.Helper()
		if at != at.Round(0) {
			t.Errorf("%s %v carries a monotonic reading", what, at)
		}
	}
	for i, rep := range f.reports {
		wallOnly(fmt.Sprintf("sync %d: the decision time", i), rep.Input.Now)
		for _, r := range rep.Kept.Recommendations {
			wallOnly(fmt.Sprintf("sync %d: a kept recommendation's time", i), r.Timestamp)
		}
		for _, e := range rep.Kept.ScaleUpEvents {
			wallOnly(fmt.Sprintf("sync %d: a kept scale-up's time", i), e.Timestamp)
		}
	}
	if len(f.reports) != 2 || len(f.reports[1].Kept.ScaleUpEvents) == 0 {
		t.Fatalf("want 2 syncs keeping a scale-up, got %d reports", len(f.reports))
	}
}

func TestDeletedHPADropsHistory(t *testing.T) {
	f := newFixture(t, DefaultOptions(), []*autoscalingv2.HorizontalPodAutoscaler{newHPA("web")}, webPods(), map[string]int32{"web": 2},
		cpuMetrics(cpuAt(50, "web-1", "web-2")))
	if err := f.sync(t, "web"); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.c.history["default/web"]; !ok {
		t.Fatal("no history kept after a reconcile")
	}
	idx := f.c.hpaFactory.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetIndexer()
	obj, _, _ := idx.GetByKey("default/web")
	if err := idx.Delete(obj); err != nil {
		t.Fatal(err)
	}
	deleted, _, err := f.c.reconcileKey(t.Context(), "default/web")
	if err != nil || !deleted {
		t.Fatalf("reconcileKey after delete = (%v, %v), want (true, nil)", deleted, err)
	}
	if _, ok := f.c.history["default/web"]; ok {
		t.Error("history kept for a deleted HPA")
	}
}

func TestForeignStatusWriter(t *testing.T) {
	cases := []struct {
		name    string
		hpa     *autoscalingv2.HorizontalPodAutoscaler
		wantWho string
	}{
		{"no managed fields", newHPA("x"), ""},
		{"own writes do not count", newHPA("x", testbuild.StatusManager(annotation.FieldManager, t0.Add(-time.Second))), ""},
		{"recent foreign status write counts", newHPA("x", testbuild.StatusManager("kube-controller-manager", t0.Add(-time.Minute))), "kube-controller-manager"},
		{"old foreign status write does not", newHPA("x", testbuild.StatusManager("kube-controller-manager", t0.Add(-11*time.Minute))), ""},
		{"latest of several writers is named", newHPA("x",
			testbuild.StatusManager("old-thing", t0.Add(-5*time.Minute)),
			testbuild.StatusManager("kube-controller-manager", t0.Add(-time.Minute))), "kube-controller-manager"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			who, _, _ := ForeignStatusWriter(tc.hpa, annotation.FieldManager, t0, 10*time.Minute)
			if who != tc.wantWho {
				t.Errorf("writer = %q, want %q", who, tc.wantWho)
			}
		})
	}
}

// gathered sums every series of the named metric family in m's registry.
func gathered(t *testing.T, m *monitor.Monitor, name string) float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
		for _, s := range mf.GetMetric() {
			switch {
			case s.GetCounter() != nil:
				sum += s.GetCounter().GetValue()
			case s.GetGauge() != nil:
				sum += s.GetGauge().GetValue()
			case s.GetHistogram() != nil:
				sum += float64(s.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

func TestReconcileWaitsForTheCacheToSeeOurStatusWrite(t *testing.T) {
	f := newFixture(t, DefaultOptions(), []*autoscalingv2.HorizontalPodAutoscaler{newHPA("web")}, webPods(), map[string]int32{"web": 2},
		cpuMetrics(cpuAt(50, "web-1", "web-2")))
	if err := f.sync(t, "web"); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.c.written["default/web"]; !ok {
		t.Fatal("the status write's resource version was not recorded")
	}
	// The fake clientset does not bump resource versions; a real server would have.
	const written = "7"
	f.c.written["default/web"] = written
	store := f.c.hpaFactory.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetStore().(interface{ Bookmark(string) })
	store.Bookmark("5") // the cache has not seen our write yet
	f.kube.ClearActions()
	if err := f.sync(t, "web"); err == nil || !strings.Contains(err.Error(), "is not as new as written version") {
		t.Fatalf("reconcile from a stale cache: err = %v, want the consistency error", err)
	}
	if len(f.reports) != 1 {
		t.Errorf("a stale reconcile produced a report")
	}
	if got := series(t, f.c.Monitor(), "horizontal_pod_autoscaler_controller_stale_sync_skips_total",
		map[string]string{"group": "autoscaling", "resource": "horizontalpodautoscalers"}); got != 1 {
		t.Errorf("stale_sync_skips_total = %v, want 1", got)
	}
	store.Bookmark(written)
	if err := f.sync(t, "web"); err != nil {
		t.Fatalf("reconcile once the cache caught up: %v", err)
	}
}

// TestAStaleCacheSkipIsRetriedWithinASecondNotAPeriodLater: a sync skipped because the
// HPA informer has not seen run's own last status write is retried a second later, so the HPA
// is decided as soon as the cache catches up (upstream waits a whole period, a lost decision).
func TestAStaleCacheSkipIsRetriedWithinASecondNotAPeriodLater(t *testing.T) {
	f := newFixture(t, DefaultOptions(), []*autoscalingv2.HorizontalPodAutoscaler{newHPA("web")}, webPods(), map[string]int32{"web": 2},
		cpuMetrics(cpuAt(50, "web-1", "web-2")))
	if err := f.sync(t, "web"); err != nil {
		t.Fatal(err)
	}
	f.c.written["default/web"] = "7"
	store := f.c.hpaFactory.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetStore().(interface{ Bookmark(string) })
	store.Bookmark("5")
	f.c.queue.Add(ns + "/web")
	if !f.c.processNext(context.Background()) {
		t.Fatal("the queue is shut down")
	}
	if len(f.reports) != 1 {
		t.Fatalf("%d reports after the skipped sync, want only the first sync's", len(f.reports))
	}
	f.clock.Step(staleCacheRetry)
	deadline := time.Now().Add(5 * time.Second)
	for f.c.queue.Len() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if f.c.queue.Len() != 1 {
		t.Fatalf("the skipped HPA is not due %s after its skip", staleCacheRetry)
	}
	store.Bookmark("7")
	f.c.processNext(context.Background())
	if len(f.reports) != 2 {
		t.Errorf("%d reports once the cache caught up, want the retry's too", len(f.reports))
	}
}

type failingPods struct{ err error }

func (f failingPods) Pods(context.Context, string, labels.Selector) ([]*corev1.Pod, error) {
	return nil, f.err
}

// TestReportCarriesWhatAReplayNeeds: besides the input and the decision, a report carries
// the pod list's own error, the scale and status writes' errors and the history kept, the
// reconcile's I/O results that a recording must hold to be replayed.
func TestReportCarriesWhatAReplayNeeds(t *testing.T) {
	podsErr := errors.New(`pods is forbidden: User "u" cannot list resource "pods"`)
	statusErr := errors.New("connection refused")
	cases := []struct {
		name               string
		setup              func(*fixture)
		wantPodsErr        error
		wantScaleWriteErr  string
		wantStatusWriteErr error
		wantScaleUps       int
	}{
		{name: "a status write refused: its error, and the sync's error says it",
			setup: func(f *fixture) {
				f.kube.PrependReactor("update", "horizontalpodautoscalers", func(a core.Action) (bool, runtime.Object, error) {
					return a.GetSubresource() == "status", nil, statusErr
				})
			},
			wantStatusWriteErr: statusErr, wantScaleUps: 1},
		{name: "a rescale written keeps its scale event", wantScaleUps: 1},
		{name: "a scale write refused: its error, and no scale event kept",
			setup:             func(f *fixture) { f.scales.conflicts = 100 },
			wantScaleWriteErr: "the object has been modified"},
		{name: "pods not listed: the reader's own error, unwrapped",
			setup: func(f *fixture) {
				src := f.c.source.(evaluation.Readers)
				src.PodReader = failingPods{podsErr}
				f.c.source = src
			},
			wantPodsErr: podsErr},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			// With a behavior, as upstream keeps scale events only then.
			hpa := newHPA("web", func(h *autoscalingv2.HorizontalPodAutoscaler) {
				h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
			})
			f := newFixture(t, DefaultOptions(), []*autoscalingv2.HorizontalPodAutoscaler{hpa}, webPods(), map[string]int32{"web": 2},
				cpuMetrics(cpuAt(100, "web-1", "web-2")))
			if tt.setup != nil {
				tt.setup(f)
			}
			_ = f.sync(t, "web")
			rep := f.reports[0]
			if !errors.Is(rep.PodsErr, tt.wantPodsErr) || (rep.PodsErr != nil && rep.PodsErr.Error() != tt.wantPodsErr.Error()) {
				t.Errorf("PodsErr = %v, want %v", rep.PodsErr, tt.wantPodsErr)
			}
			if got := fmt.Sprint(rep.ScaleWriteErr); (tt.wantScaleWriteErr == "" && rep.ScaleWriteErr != nil) || !strings.Contains(got, tt.wantScaleWriteErr) {
				t.Errorf("ScaleWriteErr = %v, want one saying %q", rep.ScaleWriteErr, tt.wantScaleWriteErr)
			}
			if diff := cmp.Diff(f.c.history["default/web"], rep.Kept); diff != "" {
				t.Errorf("Kept is not the history the controller kept (-kept +reported):\n%s", diff)
			}
			if got := len(rep.Kept.ScaleUpEvents); got != tt.wantScaleUps {
				t.Errorf("kept %d scale-up events, want %d", got, tt.wantScaleUps)
			}
			if rep.Outcome.Err != nil && strings.Contains(rep.Outcome.Err.Error(), "failed to update status") {
				t.Errorf("Outcome.Err carries the status write's failure: %v", rep.Outcome.Err)
			}
			if !errors.Is(rep.StatusWriteErr, tt.wantStatusWriteErr) {
				t.Errorf("StatusWriteErr = %v, want %v", rep.StatusWriteErr, tt.wantStatusWriteErr)
			}
			if want := replicas.StatusWriteFailed("web", statusErr); tt.wantStatusWriteErr != nil && (rep.Err == nil || rep.Err.Error() != want.Error()) {
				t.Errorf("Err = %v, want %v", rep.Err, want)
			}
		})
	}
}

// TestAWorkerTakesNoNewSyncOnceStopping: HPAs already due when the stop comes are not synced:
// a sync started then would only fail on its cancelled reads, report that failure and record
// its events (FailedGetResourceMetric for every HPA due), all for a stop.
func TestAWorkerTakesNoNewSyncOnceStopping(t *testing.T) {
	f := newFixture(t, DefaultOptions(), []*autoscalingv2.HorizontalPodAutoscaler{newHPA("web")}, webPods(), map[string]int32{"web": 2},
		cpuMetrics(cpuAt(100, "web-1", "web-2")))
	ctx, stop := context.WithCancel(context.Background())
	stop()
	if !f.c.processNext(ctx) {
		t.Fatal("the queue is shut down")
	}
	if len(f.reports) != 0 {
		t.Errorf("%d reports of a sync taken after the stop (first: %v), want none", len(f.reports), f.reports[0].Err)
	}
	select {
	case e := <-f.recorder.Events:
		t.Errorf("event %q recorded by a sync taken after the stop, want none", e)
	default:
	}
	if n := f.c.queue.Len(); n != 0 {
		t.Errorf("%d HPAs queued again after the stop, want none", n)
	}
}

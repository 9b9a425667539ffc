package controller

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/live"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
)

// TestRunReconcilesThroughInformersAndStops runs the whole loop against a fake clientset:
// informers list the HPA and pods, a worker scales the target, and cancelling the context
// makes Run return after its workers have.
func TestRunReconcilesThroughInformersAndStops(t *testing.T) {
	f := newFixture(t, DefaultOptions(), nil, nil, map[string]int32{"web": 2}, cpuMetrics(cpuAt(100, "web-1", "web-2")))
	// Objects reach the controller through the informers this time, not the indexers.
	kube := fake.NewClientset(newHPA("web"), webPods()[0], webPods()[1])
	reports := make(chan Report, 10)
	var once sync.Once
	c, err := New(DefaultOptions(), Deps{Kube: kube, Scales: &live.ScaleClient{Scales: f.scales, Mapper: testMapper()},
		Metrics: f.metrics, Recorder: f.recorder, Clock: f.clock, Sink: func(r Report) { once.Do(func() { reports <- r }) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 2) }()

	r := <-reports
	if r.Decision.DesiredReplicas != 4 || !r.ScaleWritten || !r.StatusWritten {
		t.Errorf("first report: desired %d, scale written %v, status written %v; want 4, true, true",
			r.Decision.DesiredReplicas, r.ScaleWritten, r.StatusWritten)
	}
	if err := c.Healthz(); err != nil {
		t.Errorf("healthz while running: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel: %v", err)
	}
	if err := c.Healthz(); err == nil {
		t.Error("healthz after stop reports healthy")
	}
	stored, err := kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status.DesiredReplicas != 4 {
		t.Errorf("stored desired replicas = %d, want 4", stored.Status.DesiredReplicas)
	}
}

// stopDuringScale is a ScaleTarget through which the test acts while a scale write is in
// flight (before it reaches the API), as a stop signal landing at that moment would.
type stopDuringScale struct {
	ScaleTarget
	during func(wctx context.Context) error
}

func (s stopDuringScale) SetReplicas(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference, desired int32, dryRun []string) error {
	if err := s.during(ctx); err != nil {
		return err
	}
	return s.ScaleTarget.SetReplicas(ctx, namespace, ref, desired, dryRun)
}

// TestStopNeverLeavesADecisionHalfApplied stops the controller at each point of applying a
// decision (2 -> 4 replicas): a decision is applied whole (scale, then its status) or not at
// all, and a write in flight gets WriteGrace after the stop, no more.
func TestStopNeverLeavesADecisionHalfApplied(t *testing.T) {
	cases := []struct {
		name string
		// stopAt wires the stop into the fixture; cancel is the controller's stop.
		stopAt func(t *testing.T, f *fixture, cancel context.CancelFunc)
		// wantScale and wantStatus are the stored results: spec.replicas and status.desiredReplicas.
		wantScale, wantStatus int32
		wantErr               bool
	}{{
		name:      "stop before the decision is applied: nothing is written",
		stopAt:    func(_ *testing.T, _ *fixture, cancel context.CancelFunc) { cancel() },
		wantScale: 2, wantStatus: 0, wantErr: true,
	}, {
		name: "stop while the scale write is in flight: the status write still follows",
		stopAt: func(t *testing.T, f *fixture, cancel context.CancelFunc) {
			f.c.scales = stopDuringScale{ScaleTarget: f.c.scales, during: func(context.Context) error { cancel(); return nil }}
		},
		wantScale: 4, wantStatus: 4,
	}, {
		name: "stop while the status write is in flight: it completes",
		stopAt: func(t *testing.T, f *fixture, cancel context.CancelFunc) {
			f.kube.PrependReactor("update", "horizontalpodautoscalers", func(core.Action) (bool, runtime.Object, error) {
				cancel()
				return false, nil, nil
			})
		},
		wantScale: 4, wantStatus: 4,
	}, {
		name: "a scale write still in flight WriteGrace after the stop is abandoned, and no status claims it",
		stopAt: func(t *testing.T, f *fixture, cancel context.CancelFunc) {
			f.c.scales = stopDuringScale{ScaleTarget: f.c.scales, during: func(wctx context.Context) error {
				stoppedAt := f.clock.Now()
				cancel()
				// The write hangs; time passes in quarters of the grace until it is abandoned.
				for wctx.Err() == nil {
					f.clock.Step(f.c.opts.WriteGrace / 4)
					time.Sleep(time.Millisecond)
				}
				if waited := f.clock.Since(stoppedAt); waited < f.c.opts.WriteGrace {
					t.Errorf("write abandoned %v after the stop, before its grace of %v", waited, f.c.opts.WriteGrace)
				}
				return wctx.Err()
			}}
		},
		wantScale: 2, wantStatus: 0, wantErr: true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, DefaultOptions(), []*autoscalingv2.HorizontalPodAutoscaler{newHPA("web")}, webPods(), map[string]int32{"web": 2},
				cpuMetrics(cpuAt(100, "web-1", "web-2")))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			tc.stopAt(t, f, cancel)
			_, _, err := f.c.reconcileKey(ctx, ns+"/web")
			if (err != nil) != tc.wantErr {
				t.Errorf("reconcile error %v, want error %v", err, tc.wantErr)
			}
			sc, err := f.scales.Scales(ns).Get(context.Background(), schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := sc.Spec.Replicas; got != tc.wantScale {
				t.Errorf("spec.replicas %d, want %d", got, tc.wantScale)
			}
			if got := f.storedHPA(t, "web").Status.DesiredReplicas; got != tc.wantStatus {
				t.Errorf("status.desiredReplicas %d, want %d; API actions %v", got, tc.wantStatus, f.kubeActions())
			}
		})
	}
}

// TestRunTellsHowManyHPAsItWatches: a run whose namespace has no HPA (or whose selector
// matches none) says so once its caches have synced, and again at every change.
func TestRunTellsHowManyHPAsItWatches(t *testing.T) {
	f := newFixture(t, DefaultOptions(), nil, nil, map[string]int32{}, cpuMetrics(nil))
	kube := fake.NewClientset()
	counts := make(chan int, 10)
	c, err := New(DefaultOptions(), Deps{Kube: kube, Scales: &live.ScaleClient{Scales: f.scales, Mapper: testMapper()},
		Metrics: f.metrics, Recorder: record.NewFakeRecorder(100), Count: func(n int) { counts <- n }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 1) }()
	next := func(want int) {
		t.Helper()
		select {
		case got := <-counts:
			if got != want {
				t.Errorf("count %d, want %d", got, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no count told; want %d", want)
		}
	}
	next(0)
	hpas := kube.AutoscalingV2().HorizontalPodAutoscalers(ns)
	if _, err := hpas.Create(ctx, newHPA("web", testbuild.TargetName("gone")), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	next(1)
	if err := hpas.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	next(0)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after cancel: %v", err)
	}
	select {
	case n := <-counts:
		t.Errorf("count %d told without a change", n)
	default:
	}
}

// TestAFailedReconcileIsLoggedAtV0OnlyWhenNoSinkShowsIt: run prints every report, failures
// included; the same failure as a klog error at -v 0 would say it twice per sync.
func TestAFailedReconcileIsLoggedAtV0OnlyWhenNoSinkShowsIt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sink    bool
		wantLog bool
	}{
		{"with a sink: the report shows it, no log line", true, false},
		{"without a sink: logged as an error", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, DefaultOptions(), []*autoscalingv2.HorizontalPodAutoscaler{newHPA("web", testbuild.TargetName("gone"))}, webPods(), nil, cpuMetrics(cpuAt(100, "web-1", "web-2")))
			var reports int
			if tc.sink {
				f.c.sink = func(Report) { reports++ }
			} else {
				f.c.sink = nil
			}
			var logs bytes.Buffer
			logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(&logs), textlogger.Verbosity(0)))
			ctx := klog.NewContext(context.Background(), logger)
			f.c.queue.Add(ns + "/web")
			f.c.processNext(ctx)
			if got := strings.Contains(logs.String(), "Reconciling HPA failed"); got != tc.wantLog {
				t.Errorf("logged at -v 0: %v, want %v; log:\n%s", got, tc.wantLog, logs.String())
			}
			if tc.sink && reports != 1 {
				t.Errorf("%d reports, want 1", reports)
			}
		})
	}
}

// storedEvents lists the events the fake API server holds as "reason: message xcount".
func storedEvents(t *testing.T, kube *fake.Clientset) []string {
	t.Helper()
	list, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, fmt.Sprintf("%s: %s x%d", e.Reason, e.Message, e.Count))
	}
	slices.Sort(out)
	return out
}

// TestRunWritesTheEventsOfADecisionAppliedDuringTheStop: a stop lands while the scale write
// is in flight; the write and its status follow within the grace, and so do their events.
func TestRunWritesTheEventsOfADecisionAppliedDuringTheStop(t *testing.T) {
	f := newFixture(t, DefaultOptions(), nil, nil, map[string]int32{"web": 2}, cpuMetrics(cpuAt(100, "web-1", "web-2")))
	kube := fake.NewClientset(newHPA("web"), webPods()[0], webPods()[1])
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	scales := stopDuringScale{ScaleTarget: &live.ScaleClient{Scales: f.scales, Mapper: testMapper()}, during: func(context.Context) error { cancel(); return nil }}
	c, err := New(DefaultOptions(), Deps{Kube: kube, Scales: scales, Metrics: f.metrics, Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 1) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30s of the stop")
	}
	stored, err := kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status.DesiredReplicas != 4 {
		t.Fatalf("status.desiredReplicas %d, want 4 (the decision applied during the stop)", stored.Status.DesiredReplicas)
	}
	got := storedEvents(t, kube)
	if !slices.ContainsFunc(got, func(e string) bool {
		return e == "SuccessfulRescale: New size: 4; reason: cpu resource utilization (percentage of request) above target x1"
	}) {
		t.Errorf("stored events %q, want the SuccessfulRescale of 2 -> 4", got)
	}
}

// TestEventsAreWrittenThroughTheirOwnClient: with Deps.Events set, the events of a decision
// go through that client and none through Kube, whose request budget the status and scale
// writes keep to themselves.
func TestEventsAreWrittenThroughTheirOwnClient(t *testing.T) {
	f := newFixture(t, DefaultOptions(), nil, nil, map[string]int32{"web": 2}, cpuMetrics(cpuAt(100, "web-1", "web-2")))
	kube := fake.NewClientset(newHPA("web"), webPods()[0], webPods()[1])
	events := fake.NewClientset()
	c, err := New(DefaultOptions(), Deps{Kube: kube, Events: events, Scales: &live.ScaleClient{Scales: f.scales, Mapper: testMapper()}, Metrics: f.metrics, Clock: f.clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 1) }()
	want := "SuccessfulRescale: New size: 4; reason: cpu resource utilization (percentage of request) above target x1"
	deadline := time.Now().Add(30 * time.Second)
	for !slices.Contains(storedEvents(t, events), want) {
		if time.Now().After(deadline) {
			t.Fatalf("events client holds %q after 30s, want the SuccessfulRescale of 2 -> 4", storedEvents(t, events))
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, a := range kube.Actions() {
		if a.GetResource().Resource == "events" {
			t.Errorf("Kube client sent %s events, want no event request through it", a.GetVerb())
		}
	}
}

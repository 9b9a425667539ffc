package rerun

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/controller"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/recording"
)

var t0 = time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)

const ns = "shop"

func hpaWithBehavior() *autoscalingv2.HorizontalPodAutoscaler {
	return testbuild.HPA(ns, "web", testbuild.Generation(1), testbuild.UID("uid-web"),
		testbuild.Target("apps/v1", "Deployment", "web"), testbuild.Min(1), testbuild.Max(10),
		testbuild.Metrics(testbuild.CPUUtilization(50)),
		testbuild.Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp: &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 60}}},
			ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](45),
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 30}}},
		}))
}

// world is the target, its pods and their cpu: scaling the target adds or removes pods, and
// the load is spread over them.
type world struct {
	mu       sync.Mutex
	replicas int32
	load     int64 // millicores over all pods
	clock    *testingclock.FakeClock
	kube     *fake.Clientset
}

func (w *world) podName(i int32) string { return fmt.Sprintf("web-%d", i) }

func (w *world) Scale(context.Context, string, autoscalingv2.CrossVersionObjectReference) (*replicas.Scale, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return &replicas.Scale{SpecReplicas: w.replicas, StatusReplicas: w.replicas, Selector: "app=web"}, nil
}

func (w *world) SetReplicas(ctx context.Context, _ string, _ autoscalingv2.CrossVersionObjectReference, desired int32, _ []string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := w.replicas; i < desired; i++ {
		if _, err := w.kube.CoreV1().Pods(ns).Create(ctx, w.pod(i), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for i := desired; i < w.replicas; i++ {
		if err := w.kube.CoreV1().Pods(ns).Delete(ctx, w.podName(i), metav1.DeleteOptions{}); err != nil {
			return err
		}
	}
	w.replicas = desired
	return nil
}

func (w *world) pod(i int32) *corev1.Pod {
	start := w.clock.Now().Add(-10 * time.Minute).Truncate(time.Second)
	return testbuild.Pod(ns, w.podName(i), testbuild.Labels("app", "web"),
		testbuild.Containers(testbuild.Container("app", testbuild.Requests("cpu", "100m"))),
		testbuild.StartedAt(start), testbuild.ReadySince(corev1.ConditionTrue, start))
}

func (w *world) PodResource(context.Context, string, corev1.ResourceName, labels.Selector, string) (*sampleset.Set, time.Time, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.load < 0 {
		return nil, time.Time{}, errors.New("the server is currently unable to handle the request (get pods.metrics.k8s.io)")
	}
	now := w.clock.Now()
	out := sampleset.New(int(w.replicas))
	for i := range w.replicas {
		out.Add(w.podName(i), sampleset.Sample{MilliValue: w.load / int64(w.replicas), Timestamp: sampleset.Timestamp(now.Add(-3*time.Second - 250*time.Millisecond)), Window: 15 * time.Second})
	}
	return out, now.Add(-3 * time.Second), nil
}

func (w *world) PodsMetric(context.Context, string, string, labels.Selector, labels.Selector) (*sampleset.Set, time.Time, error) {
	return nil, time.Time{}, errors.New("no custom metrics")
}

func (w *world) ObjectMetric(context.Context, string, string, autoscalingv2.CrossVersionObjectReference, labels.Selector) (int64, time.Time, error) {
	return 0, time.Time{}, errors.New("no custom metrics")
}

func (w *world) ExternalMetric(context.Context, string, string, labels.Selector) ([]int64, time.Time, error) {
	return nil, time.Time{}, errors.New("no external metrics")
}

func (w *world) Source() string { return "metrics.k8s.io/v1beta1" }

func (w *world) setLoad(milli int64) {
	w.mu.Lock()
	w.load = milli
	w.mu.Unlock()
}

// record runs the real controller (informers on a fake clientset, a fake clock) through a
// load that rises, fails for a while and falls, and returns what it recorded.
func recordRun(t *testing.T, dryRun controller.DryRun, loads []int64) *recording.Recording {
	t.Helper()
	rec, err := recording.Read("mem", bytes.NewReader(recordRunFile(t, dryRun, loads)))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// writeRecording is where TestRerunOfARecordedRunReproducesEveryDecisionExactly also writes
// its recording without dry run: the fixture plugin/simulate and plugin/timeline read
// (go test ./plugin/rerun -run TestRerunOfARecordedRun -write-recording $PWD/run.jsonl).
var writeRecording = flag.String("write-recording", "", "also write the recording of the rerun test (no dry run) to this file")

// recordRunFile is recordRun's recording as the file run --record writes.
func recordRunFile(t *testing.T, dryRun controller.DryRun, loads []int64) []byte {
	t.Helper()
	clock := testingclock.NewFakeClock(t0)
	kube := fake.NewClientset(hpaWithBehavior())
	w := &world{replicas: 2, clock: clock, kube: kube}
	for i := range w.replicas {
		if _, err := kube.CoreV1().Pods(ns).Create(t.Context(), w.pod(i), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	opts := controller.DefaultOptions()
	opts.Namespace, opts.DryRun, opts.ScaleFromCache = ns, dryRun, false
	var buf bytes.Buffer
	rc, gates := recording.ControllerOf(recording.Controller{Namespace: ns, SyncPeriod: recording.Duration(opts.SyncPeriod)}, opts.Config)
	wr, err := recording.NewWriter("mem", &buf, false, recording.Header{Recorder: "kubectl-hpa test (plugin/rerun's recordRun)", Started: t0, Controller: rc, FeatureGates: gates, MetricsSource: w.Source(), DryRun: string(dryRun)})
	if err != nil {
		t.Fatal(err)
	}
	if err := wr.Term(recording.Term{Term: 1, Start: t0}); err != nil {
		t.Fatal(err)
	}
	reports := make(chan controller.Report, 1)
	c, err := controller.New(opts, controller.Deps{Kube: kube, Scales: w, Metrics: w, Recorder: record.NewFakeRecorder(1000), Clock: clock,
		Sink: func(r controller.Report) {
			if err := wr.Sync(recording.SyncOf(recording.Reconcile{Term: 1, Key: r.Key, Input: r.Input, PodsErr: r.PodsErr, Decision: r.Decision,
				ScaleWriteErr: r.ScaleWriteErr, Outcome: r.Outcome, Kept: r.Kept, DryRunReason: r.DryRunReason})); err != nil {
				t.Error(err)
			}
			reports <- r
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 1) }()
	deadline := time.Now().Add(time.Minute)
	for i, load := range loads {
		w.setLoad(load)
		// Time passes five seconds at a time until the controller's next sync reports.
	wait:
		for {
			select {
			case <-reports:
				break wait
			case <-time.After(10 * time.Millisecond):
				if time.Now().After(deadline) {
					t.Fatalf("no sync %d within a minute", i)
				}
				if i > 0 {
					clock.Step(5 * time.Second)
				}
			}
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := wr.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// loads rise (a scale-up limited by the Pods policy), the metrics API fails for two syncs,
// then the load falls (a scale-down held by the stabilization window, then limited by the
// Percent policy).
var loads = []int64{100, 400, 900, 900, 900, 900, -1, -1, 900, 150, 150, 150, 150, 150, 150, 150, 150}

func TestRerunOfARecordedRunReproducesEveryDecisionExactly(t *testing.T) {
	for _, dry := range []controller.DryRun{controller.DryRunNone, controller.DryRunClient} {
		t.Run(string(dry), func(t *testing.T) {
			file := recordRunFile(t, dry, loads)
			if dry == controller.DryRunNone && *writeRecording != "" {
				if err := os.WriteFile(*writeRecording, file, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			rec, err := recording.Read("mem", bytes.NewReader(file))
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Syncs) != len(loads) {
				t.Fatalf("recorded %d syncs, want %d", len(rec.Syncs), len(loads))
			}
			rep, syncs, err := rerunAll(t.Context(), rec)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range rep.Divergences {
				t.Errorf("%s", d)
			}
			if rep.Syncs != len(rec.Syncs) || len(syncs) != len(rec.Syncs) || !slices.Equal(rep.Keys, []string{"shop/web"}) {
				t.Errorf("replayed %d syncs of %v, %d given to Each, of %d", rep.Syncs, rep.Keys, len(syncs), len(rec.Syncs))
			}
			var desired []int32
			for _, s := range syncs {
				desired = append(desired, s.Rerun.DesiredReplicas)
			}
			t.Logf("desired replicas per sync: %v", desired)
			if dry == controller.DryRunNone && !sawRescales(syncs) {
				t.Errorf("the scenario never rescaled both ways: %v", desired)
			}
		})
	}
}

// rerunAll reruns rec whole, keeping every replayed sync.
func rerunAll(ctx context.Context, rec *recording.Recording) (*Report, []Sync, error) {
	var syncs []Sync
	rep, err := Run(ctx, rec.Name, rec.Header, rec.All(), Options{Each: func(s Sync) error {
		syncs = append(syncs, s)
		return nil
	}})
	return rep, syncs, err
}

func sawRescales(syncs []Sync) (both bool) {
	var up, down bool
	for _, s := range syncs {
		if s.Rerun.Rescale {
			up = up || s.Rerun.DesiredReplicas > s.Rerun.CurrentReplicas
			down = down || s.Rerun.DesiredReplicas < s.Rerun.CurrentReplicas
		}
	}
	return up && down
}

func TestADifferentDecisionIsReportedBySyncFieldAndBothValues(t *testing.T) {
	rec := recordRun(t, controller.DryRunNone, loads[:4])
	last := len(rec.Syncs) - 1
	// As if run had decided otherwise at the last sync.
	rec.Syncs[last].Result.DesiredReplicas++
	// And as if it had held another history at the second.
	rec.Syncs[1].History.Recommendations[0].Replicas = 9
	rep, _, err := rerunAll(t.Context(), rec)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Equal() {
		t.Fatal("a changed recording replays equal")
	}
	var got []string
	for _, d := range rep.Divergences {
		got = append(got, d.String())
	}
	want := []string{
		fmt.Sprintf("sync 1 (line 4, shop/web): history.recommendations[0].replicas: recorded 9, replayed %d", rec.Syncs[0].Result.Kept.Recommendations[0].Replicas),
		fmt.Sprintf("sync %d (line %d, shop/web): result.desiredReplicas: recorded %d, replayed %d", last, rec.Syncs[last].Line, rec.Syncs[last].Result.DesiredReplicas, rec.Syncs[last].Result.DesiredReplicas-1),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("divergences:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestANewTermStartsEveryHistoryAfresh(t *testing.T) {
	for _, tt := range []struct {
		name        string
		newTerm     bool
		restored    bool
		wantHistory bool
	}{
		{"a sync of a new controller held nothing, as the replay does", true, false, false},
		{"a new controller that restored the persisted history starts from it", true, true, false},
		{"a sync of the same controller holding nothing is a difference", false, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := recordRun(t, controller.DryRunNone, loads[:3])
			if !tt.restored {
				rec.Syncs[2].History = nil
			}
			if tt.newTerm {
				rec.Terms = append(rec.Terms, recording.Term{Term: 2, Start: rec.Syncs[2].Now})
				rec.Syncs[2].Term = 2
			}
			rep, _, err := rerunAll(t.Context(), rec)
			if err != nil {
				t.Fatal(err)
			}
			history := false
			for _, d := range rep.Divergences {
				if d.Index != 2 {
					t.Errorf("a difference outside the changed sync: %s", d)
				}
				history = history || strings.HasPrefix(d.Field, "history")
			}
			if history != tt.wantHistory {
				t.Errorf("a difference in the history held: %v, want %v; differences: %v", history, tt.wantHistory, rep.Divergences)
			}
		})
	}
}

// A sync whose status write failed printed that failure as its error (run -o json's
// decision.error); the replay says it again from the recording, and its decision, outcome
// and history are still run's.
func TestARecordedStatusWriteFailureIsTheReplayedSyncsError(t *testing.T) {
	rec := recordRun(t, controller.DryRunNone, loads[:3])
	rec.Syncs[1].StatusWriteError = &recording.Error{Message: "dial tcp 127.0.0.1:6443: connect: connection refused"}
	rep, syncs, err := rerunAll(t.Context(), rec)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range rep.Divergences {
		t.Errorf("%s", d)
	}
	const want = "failed to update status for web: dial tcp 127.0.0.1:6443: connect: connection refused"
	if got := syncs[1].Outcome.Err; got == nil || got.Error() != want {
		t.Errorf("replayed sync's error %v, want %q", got, want)
	}
	for _, i := range []int{0, 2} {
		if got := syncs[i].Outcome.Err; got != nil {
			t.Errorf("sync %d: error %v, want none (its status write succeeded)", i, got)
		}
	}
}

// TestARerunHandsOutEachSyncBeforeReadingTheNext: a replay holds one sync at a time, so a
// recording of any length replays in the memory of one sync.
func TestARerunHandsOutEachSyncBeforeReadingTheNext(t *testing.T) {
	rec := recordRun(t, controller.DryRunNone, loads[:5])
	read := 0
	syncs := func(yield func(*recording.Sync, error) bool) {
		for i := range rec.Syncs {
			read++
			if !yield(&rec.Syncs[i], nil) {
				return
			}
		}
	}
	handed := 0
	rep, err := Run(t.Context(), rec.Name, rec.Header, syncs, Options{Each: func(s Sync) error {
		if read != s.Index+1 {
			t.Errorf("sync %d handed out after %d syncs were read", s.Index, read)
		}
		handed++
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if handed != len(rec.Syncs) || rep.Syncs != len(rec.Syncs) || !rep.Equal() {
		t.Errorf("%d syncs handed out, %d replayed, equal %v; want %d, %d, true", handed, rep.Syncs, rep.Equal(), len(rec.Syncs), len(rec.Syncs))
	}
}

func TestAnErrorOfEachOrOfTheFileEndsTheRerun(t *testing.T) {
	rec := recordRun(t, controller.DryRunNone, loads[:3])
	full := errors.New("no space left on device")
	calls := 0
	_, err := Run(t.Context(), rec.Name, rec.Header, rec.All(), Options{Each: func(Sync) error {
		calls++
		return full
	}})
	if !errors.Is(err, full) || calls != 1 {
		t.Errorf("Each failing: %v after %d calls, want %v after 1", err, calls, full)
	}
	bad := errors.New("line 5: not valid JSON")
	syncs := func(yield func(*recording.Sync, error) bool) {
		if yield(&rec.Syncs[0], nil) {
			yield(nil, bad)
		}
	}
	if _, err := Run(t.Context(), rec.Name, rec.Header, syncs, Options{}); !errors.Is(err, bad) {
		t.Errorf("a file failing: %v, want %v", err, bad)
	}
}

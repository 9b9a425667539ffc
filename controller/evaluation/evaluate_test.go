package evaluation_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild/fakemetrics"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild/fakesource"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// podsAfterMetrics answers the pod list only once a metric read has started.
type podsAfterMetrics struct {
	started <-chan struct{}
	pods    []*corev1.Pod
}

func (p podsAfterMetrics) Pods(context.Context, string, labels.Selector) ([]*corev1.Pod, error) {
	select {
	case <-p.started:
		return p.pods, nil
	case <-time.After(5 * time.Second):
		return nil, errors.New("no metric read started while the pods were being listed")
	}
}

// podsBeforeMetrics lists pods and counts the metric reads made before.
type podsBeforeMetrics struct {
	m           *signalMetrics
	pods        []*corev1.Pod
	readsBefore int32
}

func (p *podsBeforeMetrics) Pods(context.Context, string, labels.Selector) ([]*corev1.Pod, error) {
	p.readsBefore = p.m.reads.Load()
	return p.pods, nil
}

// signalMetrics closes started on the first read and counts the reads.
type signalMetrics struct {
	*fakemetrics.Client
	started chan struct{}
	reads   atomic.Int32
}

func (m *signalMetrics) PodResource(ctx context.Context, ns string, res corev1.ResourceName, sel labels.Selector, c string) (*sampleset.Set, time.Time, error) {
	if m.reads.Add(1) == 1 {
		close(m.started)
	}
	return m.Client.PodResource(ctx, ns, res, sel, c)
}

// otherHPA reports that another HPA selects the pods.
type otherHPA struct{}

func (otherHPA) OtherHPAs(context.Context, *autoscalingv2.HorizontalPodAutoscaler, labels.Selector, []*corev1.Pod) ([]string, error) {
	return []string{ns + "/other"}, nil
}

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const ns = "default"

// newHPA is default/<name>: target Deployment "web", 1..10 replicas, cpu at 50%.
func newHPA(name string) *autoscalingv2.HorizontalPodAutoscaler {
	return testbuild.HPA(ns, name, testbuild.Target("apps/v1", "Deployment", "web"), testbuild.Min(1), testbuild.Max(10),
		testbuild.Metrics(testbuild.CPUUtilization(50)))
}

// webPods are two running, ready pods of app=web, each requesting 100m cpu.
func webPods() []*corev1.Pod {
	pod := func(name string) *corev1.Pod {
		return testbuild.Pod(ns, name, testbuild.Labels("app", "web"), testbuild.Containers(corev1.Container{Name: "app",
			Resources: corev1.ResourceRequirements{Requests: testbuild.Requests("cpu", "100m")}}),
			testbuild.StartedAt(t0.Add(-10*time.Minute)), testbuild.ReadySince(corev1.ConditionTrue, t0.Add(-9*time.Minute)))
	}
	return []*corev1.Pod{pod("web-1"), pod("web-2")}
}

// cpuMetrics serves milli cpu for each pod, sampled 10 s before t0 over 30 s.
func cpuMetrics(milli int64, pods ...string) *fakemetrics.Client {
	return &fakemetrics.Client{Name: "fixture", At: t0.Add(-10 * time.Second), Resource: map[corev1.ResourceName]fakemetrics.Values{
		corev1.ResourceCPU: fakemetrics.Samples(milli, t0.Add(-10*time.Second), 30*time.Second, pods...)}}
}

func TestEvaluate(t *testing.T) {
	scale := fakesource.Scale{SpecReplicas: 2, StatusReplicas: 2, Selector: "app=web"}
	source := func(m *signalMetrics, pods evaluation.PodReader) evaluation.Readers {
		return evaluation.Readers{HPAReader: fakesource.OneHPA{Object: newHPA("web")}, HistoryReader: fakesource.NoHistory{}, ScaleReader: scale, PodReader: pods, MetricsReader: m}
	}
	newMetrics := func() *signalMetrics {
		return &signalMetrics{Client: cpuMetrics(100, "web-1", "web-2"), started: make(chan struct{})}
	}

	t.Run("without a selector tracker the pods are listed while the metrics are read", func(t *testing.T) {
		m := newMetrics()
		ev, err := evaluation.Evaluate(t.Context(), source(m, podsAfterMetrics{started: m.started, pods: webPods()}), ns, "web", evaluation.Options{Now: t0, Config: replicas.DefaultConfig()})
		if err != nil {
			t.Fatal(err)
		}
		if ev.Decision.DesiredReplicas != 4 {
			t.Errorf("desired %d (phase %s, err %v), want 4 from 100%% against 50%% on 2 pods", ev.Decision.DesiredReplicas, ev.Decision.Phase, ev.Decision.Err)
		}
	})

	t.Run("with a selector tracker that finds another HPA no metric is read, as upstream", func(t *testing.T) {
		m := newMetrics()
		ev, err := evaluation.Evaluate(t.Context(), source(m, fakesource.Pods(webPods())), ns, "web",
			evaluation.Options{Now: t0, Config: replicas.DefaultConfig(), Overlaps: otherHPA{}})
		if err != nil {
			t.Fatal(err)
		}
		if n := m.reads.Load(); n != 0 {
			t.Errorf("%d metric reads, want none", n)
		}
		if got := ev.Input.OtherHPAsSelectingPods; len(got) != 1 {
			t.Errorf("OtherHPAsSelectingPods %v, want the other HPA", got)
		}
	})

	t.Run("OmitPodTreatments decides the same without the per-pod account", func(t *testing.T) {
		var got [2]replicas.Decision
		for i, omit := range []bool{false, true} {
			ev, err := evaluation.Evaluate(t.Context(), source(newMetrics(), fakesource.Pods(webPods())), ns, "web",
				evaluation.Options{Now: t0, Config: replicas.DefaultConfig(), OmitPodTreatments: omit})
			if err != nil {
				t.Fatal(err)
			}
			got[i] = ev.Decision
		}
		full, brief := got[0], got[1]
		if len(full.Metrics) != 1 || len(full.Metrics[0].Pods) != 2 || len(brief.Metrics) != 1 || brief.Metrics[0].Pods != nil {
			t.Fatalf("pod treatments: %d metrics, %v with them; %d metrics, %v without", len(full.Metrics), full.Metrics, len(brief.Metrics), brief.Metrics)
		}
		if brief.DesiredReplicas != full.DesiredReplicas || brief.Metrics[0].Replicas != full.Metrics[0].Replicas || brief.Metrics[0].Ratio != full.Metrics[0].Ratio {
			t.Errorf("without pod treatments desired %d (metric %d, ratio %v), with them %d (metric %d, ratio %v)",
				brief.DesiredReplicas, brief.Metrics[0].Replicas, brief.Metrics[0].Ratio, full.DesiredReplicas, full.Metrics[0].Replicas, full.Metrics[0].Ratio)
		}
	})

	t.Run("Sequential lists the pods before reading any metric and decides the same; OmitTrace leaves the text out", func(t *testing.T) {
		m := newMetrics()
		pods := &podsBeforeMetrics{m: m, pods: webPods()}
		ev, err := evaluation.Evaluate(t.Context(), source(m, pods), ns, "web",
			evaluation.Options{Now: t0, Config: replicas.DefaultConfig(), Sequential: true, OmitTrace: true})
		if err != nil {
			t.Fatal(err)
		}
		if pods.readsBefore != 0 || m.reads.Load() != 1 {
			t.Errorf("%d metric reads before the pod list, %d in all; want 0 and 1", pods.readsBefore, m.reads.Load())
		}
		d := ev.Decision
		if d.DesiredReplicas != 4 || len(d.Metrics) != 1 || d.Metrics[0].Ratio != 2 || d.Trace != nil {
			t.Errorf("desired %d, metrics %v, trace %v; want 4 from a ratio of 2, and no trace", d.DesiredReplicas, d.Metrics, d.Trace)
		}
	})

	t.Run("a missing HPA is the error, as the source said it", func(t *testing.T) {
		src := evaluation.Readers{HPAReader: fakesource.OneHPA{Err: apierrors.NewNotFound(schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}, "web")}, HistoryReader: fakesource.NoHistory{}}
		if _, err := evaluation.Evaluate(t.Context(), src, ns, "web", evaluation.Options{Now: t0, Config: replicas.DefaultConfig()}); !apierrors.IsNotFound(err) {
			t.Errorf("err %v, want NotFound", err)
		}
	})

	t.Run("a caller between Gather and Decide sees the decision as read and changes what is decided; WithoutHistory decides again from nothing", func(t *testing.T) {
		m := newMetrics()
		src := source(m, podsAfterMetrics{started: m.started, pods: webPods()})
		opts := evaluation.Options{Now: t0, Config: replicas.DefaultConfig(), WithoutHistory: true}
		read, known, err := evaluation.Read(t.Context(), src, ns, "web")
		if err != nil {
			t.Fatal(err)
		}
		ev := evaluation.Gather(t.Context(), src, read, read, known, opts)
		asRead := replicas.Decide(ev.Input).DesiredReplicas
		ev.Input.Metrics = []replicas.MetricData{{PodSamples: sampleset.Of(map[string]sampleset.Sample{
			"web-1": {MilliValue: 50, Timestamp: sampleset.Timestamp(t0.Add(-10 * time.Second)), Window: 30 * time.Second},
			"web-2": {MilliValue: 50, Timestamp: sampleset.Timestamp(t0.Add(-10 * time.Second)), Window: 30 * time.Second},
		}), Timestamp: t0.Add(-10 * time.Second)}}
		evaluation.Decide(ev, opts)
		if asRead != 4 || ev.Decision.DesiredReplicas != 2 || ev.Fresh == nil || ev.Fresh.DesiredReplicas != 2 {
			t.Errorf("as read %d, decided %d, fresh %v; want 4, 2, 2", asRead, ev.Decision.DesiredReplicas, ev.Fresh)
		}
	})

	t.Run("a source that parses its selector itself is asked instead of labels.Parse", func(t *testing.T) {
		m := newMetrics()
		src := &parsingSource{Readers: source(m, fakesource.Pods(webPods()))}
		ev, err := evaluation.Evaluate(t.Context(), src, ns, "web", evaluation.Options{Now: t0, Config: replicas.DefaultConfig()})
		if err != nil {
			t.Fatal(err)
		}
		if src.parsed != "app=web" || ev.Decision.DesiredReplicas != 4 {
			t.Errorf("parsed %q, desired %d; want app=web and 4", src.parsed, ev.Decision.DesiredReplicas)
		}
	})
}

// parsingSource records the selector it was asked to parse.
type parsingSource struct {
	evaluation.Readers
	parsed string
}

func (p *parsingSource) ParseSelector(s string) (labels.Selector, error) {
	p.parsed = s
	return labels.Parse(s)
}

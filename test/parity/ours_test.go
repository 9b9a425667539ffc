package parity

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// hpa is the scenario's HPA: only this metric, bounds that never clamp.
func (s *scenario) hpa() *autoscalingv2.HorizontalPodAutoscaler {
	minReplicas := int32(1)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: s.ns, Generation: 1},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    &minReplicas,
			MaxReplicas:    math.MaxInt32,
			Metrics:        []autoscalingv2.MetricSpec{s.metricSpec()},
		},
	}
	if s.specReplicas == 0 {
		// Upstream computes metrics from zero replicas only for an HPA that scaled itself to zero.
		minReplicas = 0
		hpa.Status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{
			{Type: autoscalingv2.ScaledToZero, Status: corev1.ConditionTrue, Reason: "ScaledToZero", Message: "the HPA scaled the target to zero"},
		}
	}
	if s.upTolerance != "" || s.downTolerance != "" {
		hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
		if s.upTolerance != "" {
			hpa.Spec.Behavior.ScaleUp = &autoscalingv2.HPAScalingRules{Tolerance: ptr(resource.MustParse(s.upTolerance))}
		}
		if s.downTolerance != "" {
			hpa.Spec.Behavior.ScaleDown = &autoscalingv2.HPAScalingRules{Tolerance: ptr(resource.MustParse(s.downTolerance))}
		}
	}
	return hpa
}

// source serves our controller what upstream's is served, through the same reader
// interfaces the commands read a cluster through, so that our side decides by
// evaluation.Evaluate exactly as kubectl hpa run and explain do.
type source struct {
	hpa     *autoscalingv2.HorizontalPodAutoscaler
	history replicas.History
	scale   replicas.Scale
	pods    []*corev1.Pod
	metrics map[string]*scenario // by identity()
	now     time.Time
}

var _ evaluation.Source = (*source)(nil)

func (s *source) HPA(context.Context, string, string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	return s.hpa.DeepCopy(), nil
}

func (s *source) History(context.Context, string, string) history.Known {
	return history.Kept(s.history)
}

func (s *source) Scale(context.Context, string, autoscalingv2.CrossVersionObjectReference) (*replicas.Scale, error) {
	scale := s.scale
	return &scale, nil
}

func (s *source) Pods(_ context.Context, _ string, selector labels.Selector) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	for _, p := range s.pods {
		if selector.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out, nil
}

func (s *source) metric(identity string) (*scenario, error) {
	m, ok := s.metrics[identity]
	if !ok {
		return nil, fmt.Errorf("parity: our controller asked for %s, which no scenario defines", identity)
	}
	if m.fetchFails {
		return nil, errors.New(fetchErrorText)
	}
	return m, nil
}

func (s *source) podSamples(identity string) (*sampleset.Set, time.Time, error) {
	m, err := s.metric(identity)
	if err != nil {
		return nil, time.Time{}, err
	}
	out := sampleset.New(len(m.samples))
	for _, name := range slices.Sorted(maps.Keys(m.samples)) {
		sm := m.samples[name]
		out.Add(name, sampleset.Sample{MilliValue: sm.value, Timestamp: sampleset.Timestamp(sm.at.time(s.now)), Window: sm.window})
	}
	return out, m.metricTimestamp.time(s.now), nil
}

func (s *source) PodResource(_ context.Context, _ string, res corev1.ResourceName, _ labels.Selector, container string) (*sampleset.Set, time.Time, error) {
	return s.podSamples(fmt.Sprintf("resource/%s/%s", res, container))
}

func (s *source) PodsMetric(_ context.Context, _, name string, _, _ labels.Selector) (*sampleset.Set, time.Time, error) {
	return s.podSamples("pods/" + name)
}

func (s *source) ObjectMetric(_ context.Context, _, name string, _ autoscalingv2.CrossVersionObjectReference, _ labels.Selector) (int64, time.Time, error) {
	m, err := s.metric("object/" + name)
	if err != nil {
		return 0, time.Time{}, err
	}
	return m.objectValue, m.metricTimestamp.time(s.now), nil
}

func (s *source) ExternalMetric(_ context.Context, _, name string, _ labels.Selector) ([]int64, time.Time, error) {
	m, err := s.metric("external/" + name)
	if err != nil {
		return nil, time.Time{}, err
	}
	return append([]int64(nil), m.externalValues...), m.metricTimestamp.time(s.now), nil
}

func (s *source) Source() string { return "parity scenario" }

// evaluate decides through evaluation.Evaluate, the commands' one evaluation path.
func (s *source) evaluate(at time.Time, cfg replicas.Config, omitPodTreatments bool) (*evaluation.Evaluation, error) {
	return evaluation.Evaluate(context.Background(), s, s.hpa.Namespace, s.hpa.Name, evaluation.Options{Now: at, Config: cfg, OmitPodTreatments: omitPodTreatments})
}

// config is the controller configuration the scenario runs under.
func (s *scenario) config() replicas.Config {
	cfg := replicas.DefaultConfig()
	cfg.Tolerance = s.clusterTolerance
	cfg.CPUInitializationPeriod = s.cpuInitializationPeriod
	cfg.InitialReadinessDelay = s.initialReadinessDelay
	cfg.PodLevelResources = s.podLevelResources
	return cfg
}

// briefView is d without its pod treatments and with NaN ratios (a metric without usable
// values) made equal to each other for reflect.DeepEqual; a ratio is never -Inf otherwise.
func briefView(d replicas.Decision) replicas.Decision {
	d.Metrics = slices.Clone(d.Metrics)
	for i := range d.Metrics {
		m := &d.Metrics[i]
		m.Pods = nil
		if math.IsNaN(m.Ratio) {
			m.Ratio = math.Inf(-1)
		}
		if math.IsNaN(m.RebalancedRatio) {
			m.RebalancedRatio = math.Inf(-1)
		}
	}
	return d
}

// runOurs decides the scenario as our commands do and extracts the one metric's proposal.
func runOurs(s *scenario, now time.Time, pods []*corev1.Pod) (result, error) {
	src := &source{
		hpa:     s.hpa(),
		scale:   replicas.Scale{SpecReplicas: s.specReplicas, StatusReplicas: s.statusReplicas, Selector: podLabelKey + "=" + podLabelValue},
		pods:    pods,
		metrics: map[string]*scenario{s.identity(): s},
		now:     now,
	}
	ev, err := src.evaluate(now, s.config(), false)
	if err != nil {
		return result{}, err
	}
	d := ev.Decision
	// run decides without the per-pod account: the decision must be the same.
	brief, err := src.evaluate(now, s.config(), true)
	if err != nil {
		return result{}, err
	}
	if full, brief := briefView(d), briefView(brief.Decision); !reflect.DeepEqual(full, brief) {
		return result{}, fmt.Errorf("the decision without pod treatments differs from the one with them:\n%+v\n%+v", full, brief)
	}
	if len(d.Metrics) != 1 {
		return result{}, fmt.Errorf("the core computed %d metric results, want 1 (phase %s, err %v)", len(d.Metrics), d.Phase, d.Err)
	}
	m := d.Metrics[0]
	if m.Err != nil {
		return result{Err: m.Err.Error(), Reason: m.Reason}, nil
	}
	return result{Replicas: m.Replicas, Status: renderStatus(m.Status)}, nil
}

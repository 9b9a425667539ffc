package parity

import (
	"errors"
	"fmt"
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// input turns a scenario into the core's Input: an HPA with only this metric, bounds that never
// clamp, and a Config carrying the scenario's tolerance, periods and gate.
func (s *scenario) input(now time.Time, pods []*corev1.Pod) replicas.Input {
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

	return replicas.Input{
		HPA:     hpa,
		Scale:   &replicas.Scale{SpecReplicas: s.specReplicas, StatusReplicas: s.statusReplicas, Selector: podLabelKey + "=" + podLabelValue},
		Pods:    pods,
		Metrics: []replicas.MetricData{s.metricData(now)},
		Now:     now,
		Config:  s.config(),
	}
}

// metricData is what the metrics layer would hand the core for the scenario's metric.
func (s *scenario) metricData(now time.Time) replicas.MetricData {
	data := replicas.MetricData{Timestamp: s.metricTimestamp.time(now), Source: "parity scenario"}
	switch {
	case s.fetchFails:
		data = replicas.MetricData{Err: errors.New(fetchErrorText)}
	case s.kind.podBased():
		data.PodSamples = make(map[string]replicas.Sample, len(s.samples))
		for name, sm := range s.samples {
			data.PodSamples[name] = replicas.Sample{MilliValue: sm.value, Timestamp: sm.at.time(now), Window: sm.window}
		}
	case s.kind == kindObjectValue || s.kind == kindObjectAverageValue:
		data.Value = s.objectValue
	default:
		data.Values = append([]int64(nil), s.externalValues...)
	}
	return data
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

// runOurs decides the scenario with our core and extracts the one metric's proposal.
func runOurs(s *scenario, now time.Time, pods []*corev1.Pod) (result, error) {
	d := replicas.Decide(s.input(now, pods))
	if len(d.Metrics) != 1 {
		return result{}, fmt.Errorf("the core computed %d metric results, want 1 (phase %s, err %v)", len(d.Metrics), d.Phase, d.Err)
	}
	m := d.Metrics[0]
	if m.Err != nil {
		return result{Err: m.Err.Error(), Reason: m.Reason}, nil
	}
	return result{Replicas: m.Replicas, Status: renderStatus(m.Status)}, nil
}

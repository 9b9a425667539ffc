package recording

import (
	"errors"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// t0 carries nanoseconds, as run's clock does: a recording must keep them.
var t0 = time.Date(2026, 12, 1, 18, 0, 0, 123456789, time.UTC)

func testHeader() Header {
	c, g := ControllerOf(Controller{Namespace: "shop", SyncPeriod: Duration(15 * time.Second), Workers: 5}, replicas.DefaultConfig())
	return Header{Recorder: "kubectl-hpa test", Started: t0, Controller: c, FeatureGates: g, MetricsSource: "metrics.k8s.io/v1beta1", DryRun: "none"}
}

func testHPA(metrics ...autoscalingv2.MetricSpec) *autoscalingv2.HorizontalPodAutoscaler {
	return testbuild.HPA("shop", "web", testbuild.UID("u-1"), testbuild.Generation(3),
		func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl-hpa", Subresource: "status"}}
		},
		testbuild.Target("apps/v1", "Deployment", "web"), testbuild.Min(1), testbuild.Max(10), testbuild.Metrics(metrics...),
		testbuild.Replicas(2, 2), testbuild.LastScaleTime(t0.Add(-time.Minute).Truncate(time.Second)))
}

func external(avg string) autoscalingv2.MetricSpec {
	q := resource.MustParse(avg)
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "queue"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}}}
}

func testPod(name string, ready bool, started time.Time) *corev1.Pod {
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	return testbuild.Pod("shop", name, testbuild.Labels("app", "web"),
		testbuild.Containers(testbuild.Container("app", testbuild.Requests("cpu", "200m", "memory", "64Mi"))),
		testbuild.StartedAt(started), testbuild.ReadySince(status, started.Add(5*time.Second)))
}

func webSamples(window time.Duration, milli ...int64) *sampleset.Set {
	out := map[string]sampleset.Sample{}
	for i, m := range milli {
		out[fmt.Sprintf("web-%d", i)] = sampleset.Sample{MilliValue: m, Timestamp: sampleset.Timestamp(t0.Add(-7*time.Second - 250*time.Millisecond)), Window: window}
	}
	return sampleset.Of(out)
}

// reconciles are decisions of every shape a recording must carry, each decided and settled
// as run does.
func reconciles() map[string]Reconcile {
	old := t0.Add(-10 * time.Minute).Truncate(time.Second)
	pods := []*corev1.Pod{testPod("web-0", true, old), testPod("web-1", true, old), testPod("web-2", false, t0.Add(-20*time.Second).Truncate(time.Second))}
	scale := &replicas.Scale{SpecReplicas: 3, StatusReplicas: 3, Selector: "app=web"}
	held := replicas.History{
		Recommendations: []replicas.Recommendation{{Replicas: 3, Timestamp: t0.Add(-15 * time.Second)}, {Replicas: 5, Timestamp: t0.Add(-30 * time.Second)}},
		ScaleUpEvents:   []replicas.ScaleEvent{{ReplicaChange: 1, Timestamp: t0.Add(-2 * time.Minute)}, {ReplicaChange: 2, Timestamp: t0.Add(-20 * time.Minute), Outdated: true}},
	}
	known := replicas.History{Recommendations: []replicas.Recommendation{}}
	in := func(hpa *autoscalingv2.HorizontalPodAutoscaler, h replicas.History) replicas.Input {
		return replicas.Input{HPA: hpa, Scale: scale, Pods: pods, History: h, Now: t0, Config: replicas.DefaultConfig()}
	}
	cases := map[string]replicas.Input{}

	up := in(testHPA(testbuild.CPUUtilization(50)), held)
	up.Metrics = []replicas.MetricData{{PodSamples: webSamples(15*time.Second+500*time.Millisecond, 180, 190, 10), Timestamp: t0.Add(-7 * time.Second), Source: "metrics.k8s.io/v1beta1"}}
	cases["cpu scale-up with a held history"] = up

	first := up
	first.History = replicas.History{}
	cases["first sync: the history never held"] = first

	empty := up
	empty.History = known
	cases["a known but empty history"] = empty

	ext := in(testHPA(testbuild.CPUUtilization(50), external("2")), held)
	ext.Metrics = []replicas.MetricData{
		{Err: errors.New(`unable to fetch metrics from resource metrics API: the server is currently unable to handle the request (get pods.metrics.k8s.io)`)},
		{Values: []int64{4000, 2500}, Timestamp: t0.Add(-3 * time.Second)},
	}
	cases["a failed metric beside an external one"] = ext

	noScale := in(testHPA(testbuild.CPUUtilization(50)), held)
	noScale.Scale, noScale.Pods = nil, nil
	noScale.ScaleErr = &replicas.ScaleError{Stage: replicas.ScaleErrorMapping, Err: errors.New(`no matches for kind "Rollout" in group "argoproj.io"`)}
	cases["the scale unreadable at the mapping step"] = noScale

	getFailed := noScale
	getFailed.ScaleErr = errors.New("deployments.apps \"web\" not found")
	cases["the scale GET failed"] = getFailed

	overlap := in(testHPA(testbuild.CPUUtilization(50)), held)
	overlap.OtherHPAsSelectingPods = []string{"shop/other"}
	overlap.Metrics = []replicas.MetricData{{Err: errors.New("pods are controlled by more than one HPA (e.g. [shop/other])")}}
	cases["pods selected by another HPA"] = overlap

	out := map[string]Reconcile{}
	for name, in := range cases {
		d := replicas.Decide(in)
		o := replicas.Apply(in, d, nil)
		out[name] = Reconcile{Term: 1, Key: "shop/web", Input: in, Decision: d, Outcome: o, Kept: o.History}
	}

	podsFailed := in(testHPA(testbuild.CPUUtilization(50)), held)
	podsFailed.Pods = nil
	podsErr := errors.New("pods is forbidden")
	podsFailed.Metrics = []replicas.MetricData{{Err: fmt.Errorf("unable to get pods while calculating replica count: %w", podsErr)}}
	d := replicas.Decide(podsFailed)
	o := replicas.Apply(podsFailed, d, nil)
	out["the pods unlisted"] = Reconcile{Term: 1, Key: "shop/web", Input: podsFailed, PodsErr: podsErr, Decision: d, Outcome: o, Kept: d.History}

	writeFailed := up
	d = replicas.Decide(writeFailed)
	werr := errors.New("the server rejected our request due to an error in our request")
	o = replicas.Apply(writeFailed, d, werr)
	out["the scale write failed"] = Reconcile{Term: 1, Key: "shop/web", Input: writeFailed, Decision: d, ScaleWriteErr: werr, Outcome: o, Kept: d.History}

	dry := up
	d = replicas.Decide(dry)
	o = replicas.Apply(dry, d, nil)
	out["a dry run keeps no scale event"] = Reconcile{Term: 1, Key: "shop/web", Input: dry, Decision: d, Outcome: o, Kept: d.History, DryRunReason: "--dry-run=client"}
	return out
}

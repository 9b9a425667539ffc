package replicas

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// scenario draws a random but API-valid Input from seed: pods with phases, readiness and start
// times around the cpu initialization period, per-container requests and sidecars, present,
// missing and superfluous samples, every metric source and target type, behaviors, tolerances,
// histories and the scale-to-zero condition.
func scenario(seed uint64) Input {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	cfg := testConfig()
	cfg.LegacyScaleUpFactor = 2
	cfg.ScaleToZero = r.IntN(4) != 0
	cfg.PodLevelResources = r.IntN(2) == 0

	nPods := r.IntN(12)
	pods := make([]*corev1.Pod, nPods)
	for i := range pods {
		var opts []testbuild.PodOption
		switch r.IntN(12) {
		case 0:
			opts = append(opts, testbuild.Phase(corev1.PodPending))
		case 1:
			opts = append(opts, testbuild.Phase(corev1.PodFailed))
		case 2:
			opts = append(opts, testbuild.DeletedAt(testNow))
		case 3:
			opts = append(opts, testbuild.Phase(corev1.PodSucceeded))
		}
		start := testNow.Add(-time.Duration(r.IntN(300)) * time.Second)
		opts = append(opts, testbuild.StartedAt(start))
		switch r.IntN(6) {
		case 0:
			opts = append(opts, testbuild.NoConditions())
		case 1:
			opts = append(opts, testbuild.ReadySince(corev1.ConditionFalse, start.Add(time.Duration(r.IntN(30))*time.Second)))
		default:
			opts = append(opts, testbuild.ReadySince(corev1.ConditionTrue, start.Add(time.Duration(r.IntN(60))*time.Second)))
		}
		req := int64(100 + 100*r.IntN(10))
		opts = append(opts, testbuild.ContainerRequests(corev1.ResourceCPU, req, req/2+50))
		p := pod(fmt.Sprintf("p-%d", i), opts...)
		for c := range p.Spec.Containers {
			p.Spec.Containers[c].Resources.Requests[corev1.ResourceMemory] = *resource.NewQuantity(int64(64<<20*(1+r.IntN(4))), resource.BinarySI)
		}
		if r.IntN(8) == 0 {
			always := corev1.ContainerRestartPolicyAlways
			p.Spec.InitContainers = []corev1.Container{{Name: "sidecar", RestartPolicy: &always, Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(50, resource.DecimalSI), corev1.ResourceMemory: resource.MustParse("32Mi")}}}}
		}
		if r.IntN(10) == 0 {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(int64(500+100*r.IntN(10)), resource.DecimalSI)}}
		}
		pods[i] = p
	}

	podSamples := func(scale int64) *sampleset.Set {
		m := map[string]sampleset.Sample{}
		for _, p := range pods {
			if r.IntN(7) == 0 {
				continue
			}
			m[p.Name] = sampleset.Sample{MilliValue: int64(r.IntN(int(scale))), Timestamp: sampleset.Timestamp(testNow.Add(-time.Duration(r.IntN(90)) * time.Second)), Window: time.Duration(15+r.IntN(60)) * time.Second}
		}
		if r.IntN(6) == 0 {
			m["gone-pod"] = sampleset.Sample{MilliValue: int64(r.IntN(int(scale))), Timestamp: sampleset.Timestamp(testNow), Window: time.Minute}
		}
		return sampleSet(m)
	}
	nMetrics := 1 + r.IntN(3)
	var specs []autoscalingv2.MetricSpec
	var data []MetricData
	hasObjExt := false
	for range nMetrics {
		var spec autoscalingv2.MetricSpec
		var md MetricData
		switch r.IntN(9) {
		case 0:
			spec, md = testbuild.CPUUtilization(int32(10+r.IntN(150))), MetricData{PodSamples: podSamples(2000)}
		case 1:
			spec, md = testbuild.ResourceUtilization(corev1.ResourceMemory, int32(10+r.IntN(150))), MetricData{PodSamples: podSamples(400 << 30)}
		case 2:
			spec, md = testbuild.ResourceAverage(corev1.ResourceCPU, int64(50+r.IntN(1000))), MetricData{PodSamples: podSamples(2000)}
		case 3:
			spec, md = testbuild.ContainerUtilization(corev1.ResourceCPU, "container1", int32(10+r.IntN(150))), MetricData{PodSamples: podSamples(1000)}
		case 4:
			spec, md = testbuild.PodsAverage("qps", int64(1000+r.IntN(20000))), MetricData{PodSamples: podSamples(40000)}
		case 5:
			spec, md, hasObjExt = testbuild.ObjectValue(testDeployment, "qps", int64(1000+r.IntN(20000))), MetricData{Value: int64(r.IntN(60000))}, true
		case 6:
			spec, md, hasObjExt = testbuild.ObjectAverage(testDeployment, "qps", int64(1000+r.IntN(5000))), MetricData{Value: int64(r.IntN(60000))}, true
		case 7:
			spec, md, hasObjExt = testbuild.ExternalValue("qps", testExternalSelector, int64(1000+r.IntN(20000))), MetricData{Values: []int64{int64(r.IntN(30000)), int64(r.IntN(30000))}}, true
		default:
			spec, md, hasObjExt = testbuild.ExternalAverage("qps", testExternalSelector, int64(1000+r.IntN(5000))), MetricData{Values: []int64{int64(r.IntN(30000))}}, true
		}
		if r.IntN(15) == 0 {
			md = MetricData{Err: fmt.Errorf("metrics unavailable")}
		}
		specs = append(specs, spec)
		data = append(data, md)
	}

	minR := int32(1 + r.IntN(4))
	if hasObjExt && r.IntN(3) == 0 {
		minR = 0
	}
	maxR := minR + int32(r.IntN(20))
	if maxR == 0 {
		maxR = 1
	}
	opts := []testbuild.HPAOption{testbuild.Min(minR), testbuild.Max(maxR), testbuild.Metrics(specs...)}
	if r.IntN(2) == 0 {
		b := &autoscalingv2.HorizontalPodAutoscalerBehavior{}
		if r.IntN(2) == 0 {
			b.ScaleUp = rules(int32(r.IntN(5)), int32(15+r.IntN(120)), int32(r.IntN(200)), int32(15+r.IntN(120)), int32(r.IntN(300)))
		}
		if r.IntN(2) == 0 {
			b.ScaleDown = rules(int32(r.IntN(5)), int32(15+r.IntN(120)), int32(r.IntN(100)), int32(15+r.IntN(120)), int32(r.IntN(300)))
		}
		for _, rr := range []*autoscalingv2.HPAScalingRules{b.ScaleUp, b.ScaleDown} {
			if rr != nil && len(rr.Policies) == 0 {
				rr.Policies = []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}}
			}
			if rr != nil && r.IntN(3) == 0 {
				rr.Tolerance = ptr.To(resource.MustParse(fmt.Sprintf("0.%02d", r.IntN(30))))
			}
			if rr != nil && r.IntN(5) == 0 {
				p := []autoscalingv2.ScalingPolicySelect{autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect}[r.IntN(2)]
				rr.SelectPolicy = &p
			}
		}
		opts = append(opts, testbuild.Behavior(b))
	}
	if r.IntN(4) == 0 {
		opts = append(opts, testbuild.Conditions(testbuild.ScaledToZero()))
	}
	current := int32(r.IntN(int(maxR) + 4))
	in := input(hpa(opts...), current, withPods(pods...), withData(data...))
	in.Config = cfg
	in.Scale.StatusReplicas = int32(nPods)
	if r.IntN(3) == 0 {
		in.History = History{}
	} else {
		for range r.IntN(4) {
			in.History.Recommendations = append(in.History.Recommendations, Recommendation{Replicas: int32(r.IntN(int(maxR) + 2)), Timestamp: testNow.Add(-time.Duration(r.IntN(600)) * time.Second)})
		}
		for range r.IntN(3) {
			in.History.ScaleUpEvents = append(in.History.ScaleUpEvents, ScaleEvent{ReplicaChange: int32(1 + r.IntN(3)), Timestamp: testNow.Add(-time.Duration(r.IntN(200)) * time.Second)})
			in.History.ScaleDownEvents = append(in.History.ScaleDownEvents, ScaleEvent{ReplicaChange: int32(1 + r.IntN(3)), Timestamp: testNow.Add(-time.Duration(r.IntN(200)) * time.Second)})
		}
	}
	return in
}

// decisionCmp compares decisions: errors by text, pod treatments in name order.
var decisionCmp = cmp.Options{
	cmp.Comparer(func(a, b error) bool {
		if a == nil || b == nil {
			return a == nil && b == nil
		}
		return a.Error() == b.Error()
	}),
	cmp.Transformer("sortPods", func(p []PodTreatment) []PodTreatment {
		out := slices.Clone(p)
		slices.SortFunc(out, func(a, b PodTreatment) int { return strings.Compare(a.Name, b.Name) })
		return out
	}),
}

func addSeeds(f *testing.F) {
	for _, s := range []uint64{0, 1, 2, 3, 7, 42, 1234, 99991, 1 << 40} {
		f.Add(s)
	}
}

// FuzzDecideInvariants: the result lies in [min, max] (or is current when nothing could be
// computed, or 0 when autoscaling is disabled); deciding twice gives the same decision; a
// within-tolerance proposal is the current count, and all-within-tolerance never rescales.
func FuzzDecideInvariants(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, seed uint64) {
		in := scenario(seed)
		d := Decide(in)
		switch d.Phase {
		case PhaseComputed, PhaseClampedToRange:
			if d.DesiredReplicas < d.MinReplicas || d.DesiredReplicas > d.MaxReplicas {
				t.Fatalf("desired %d outside [%d, %d] (phase %s)\n%s", d.DesiredReplicas, d.MinReplicas, d.MaxReplicas, d.Phase, traceText(d))
			}
		case PhaseMetricsFailed:
			if d.Rescale || d.DesiredReplicas != d.CurrentReplicas {
				t.Fatalf("failed decision rescales: %+v", d)
			}
		case PhaseDisabled:
			if d.Rescale || d.DesiredReplicas != 0 {
				t.Fatalf("disabled decision rescales: %+v", d)
			}
		default:
			t.Fatalf("unexpected phase %s", d.Phase)
		}
		if d.Rescale != (d.DesiredReplicas != d.CurrentReplicas) {
			t.Fatalf("rescale %v but desired %d current %d", d.Rescale, d.DesiredReplicas, d.CurrentReplicas)
		}
		if again := Decide(in); !cmp.Equal(d, again, decisionCmp) {
			t.Fatalf("second decision differs:\n%s", cmp.Diff(d, again, decisionCmp))
		}
		allWithin := d.Phase == PhaseComputed && len(d.Metrics) > 0 && in.Scale.SpecReplicas > 0
		for _, m := range d.Metrics {
			// Per-pod Object/External targets hold at scale.status.replicas, the others at spec.
			hold := d.CurrentReplicas
			if perPodTarget(in.HPA.Spec.Metrics[m.Index]) {
				hold = in.Scale.StatusReplicas
			}
			if m.Err == nil && m.WithinTolerance && m.Replicas != hold {
				t.Fatalf("metric %d within tolerance proposes %d, want %d", m.Index, m.Replicas, hold)
			}
			allWithin = allWithin && m.Err == nil && m.WithinTolerance && hold == d.CurrentReplicas
		}
		if allWithin && len(in.History.Recommendations) == 0 && in.History.Recommendations != nil && d.DesiredReplicas != d.CurrentReplicas {
			t.Fatalf("every metric within tolerance, yet %d -> %d\n%s", d.CurrentReplicas, d.DesiredReplicas, traceText(d))
		}
		out := Apply(in, d, nil)
		if d.Phase != PhaseScaleFailed && out.Status.CurrentReplicas != d.CurrentReplicas {
			t.Fatalf("status current replicas %d, want %d", out.Status.CurrentReplicas, d.CurrentReplicas)
		}
	})
}

// FuzzDecideBrief: omitting the per-pod account (Input.OmitPodTreatments), the trace and
// the recommendations it counts (Input.OmitTrace) or both changes nothing else.
func FuzzDecideBrief(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, seed uint64) {
		full := Decide(scenario(seed))
		opts := cmp.Options{decisionCmp, cmpopts.EquateNaNs()}
		for _, omit := range []struct{ pods, trace bool }{{true, false}, {false, true}, {true, true}} {
			want := full
			want.Metrics = slices.Clone(full.Metrics)
			if omit.pods {
				for i := range want.Metrics {
					want.Metrics[i].Pods = nil
				}
			}
			if omit.trace {
				want.Trace = nil
				if full.Stabilization != nil {
					st := *full.Stabilization
					st.Considered = nil
					want.Stabilization = &st
				}
			}
			in := scenario(seed)
			in.OmitPodTreatments, in.OmitTrace = omit.pods, omit.trace
			if brief := Decide(in); !cmp.Equal(want, brief, opts) {
				t.Fatalf("the decision omitting pod treatments %v, trace %v differs:\n%s", omit.pods, omit.trace, cmp.Diff(want, brief, opts))
			}
		}
	})
}

// FuzzDecideHistoryOwned: recording in the given history's array (Input.HistoryOwned)
// gives the same decision, and the same history after it, as recording in a copy.
func FuzzDecideHistoryOwned(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, seed uint64) {
		want := Decide(scenario(seed))
		in := scenario(seed)
		in.HistoryOwned = true
		if got := Decide(in); !cmp.Equal(want, got, decisionCmp, cmpopts.EquateNaNs()) {
			t.Fatalf("the decision recording in the given history differs:\n%s", cmp.Diff(want, got, decisionCmp, cmpopts.EquateNaNs()))
		}
	})
}

func perPodTarget(spec autoscalingv2.MetricSpec) bool {
	switch {
	case spec.Object != nil:
		return spec.Object.Target.Type == autoscalingv2.AverageValueMetricType
	case spec.External != nil:
		return spec.External.Target.AverageValue != nil
	}
	return false
}

// FuzzDecideOrderIndependence: shuffling the pods, or the order their samples were added in,
// changes nothing; the count does not depend on the order of metrics either (max over metrics).
func FuzzDecideOrderIndependence(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, seed uint64) {
		in := scenario(seed)
		d := Decide(in)

		shuffled := in
		shuffled.Pods = slices.Clone(in.Pods)
		r := rand.New(rand.NewPCG(seed, 7))
		r.Shuffle(len(shuffled.Pods), func(i, j int) { shuffled.Pods[i], shuffled.Pods[j] = shuffled.Pods[j], shuffled.Pods[i] })
		if ds := Decide(shuffled); !cmp.Equal(d, ds, decisionCmp) {
			t.Fatalf("pod order changed the decision:\n%s", cmp.Diff(d, ds, decisionCmp))
		}

		resampled := in
		resampled.Metrics = slices.Clone(in.Metrics)
		for i, m := range resampled.Metrics {
			if m.PodSamples == nil {
				continue
			}
			type named struct {
				pod string
				s   sampleset.Sample
			}
			var all []named
			for pod, s := range m.PodSamples.All() {
				all = append(all, named{pod, s})
			}
			r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
			set := sampleset.New(len(all))
			for _, n := range all {
				set.Add(n.pod, n.s)
			}
			resampled.Metrics[i].PodSamples = set
		}
		if ds := Decide(resampled); !cmp.Equal(d, ds, decisionCmp) {
			t.Fatalf("the samples' order changed the decision:\n%s", cmp.Diff(d, ds, decisionCmp))
		}

		reversed := in
		reversed.HPA = in.HPA.DeepCopy()
		slices.Reverse(reversed.HPA.Spec.Metrics)
		reversed.Metrics = slices.Clone(in.Metrics)
		slices.Reverse(reversed.Metrics)
		dr := Decide(reversed)
		if dr.Phase != d.Phase || dr.DesiredReplicas != d.DesiredReplicas || dr.MetricReplicas != d.MetricReplicas || dr.Rescale != d.Rescale {
			t.Fatalf("metric order changed the decision: %s %d (metrics %d) vs %s %d (metrics %d)",
				d.Phase, d.DesiredReplicas, d.MetricReplicas, dr.Phase, dr.DesiredReplicas, dr.MetricReplicas)
		}
	})
}

// FuzzSimpleSelector: the allocation-free fast path accepts only selectors labels.Parse accepts.
func FuzzSimpleSelector(f *testing.F) {
	for _, s := range []string{"name=test-pod", "app.kubernetes.io/name=web,tier=front", "a=b,c", "a==b", "A/b=c", "x=", "k=v v", "-a=b", "a=b-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sel string) {
		if !simpleEqualitySelector(sel) {
			return
		}
		if _, err := labels.Parse(sel); err != nil {
			t.Fatalf("fast path accepted %q, labels.Parse rejects it: %v", sel, err)
		}
	})
}

func TestScenarioGeneratorCoversThePhases(t *testing.T) {
	seen := map[Phase]int{}
	for seed := range uint64(400) {
		seen[Decide(scenario(seed)).Phase]++
	}
	for _, p := range []Phase{PhaseComputed, PhaseMetricsFailed, PhaseDisabled, PhaseClampedToRange} {
		if seen[p] == 0 {
			t.Errorf("no scenario reached phase %s (%v)", p, seen)
		}
	}
}

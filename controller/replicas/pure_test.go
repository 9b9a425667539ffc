package replicas

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// barePod is a pod with only what groupPods reads: name, phase, start time and an optional
// Ready condition (no conditions when ready is "").
func barePod(name string, phase corev1.PodPhase, start *time.Time, ready corev1.ConditionStatus, since time.Time) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Phase: phase}}
	if start != nil {
		p.Status.StartTime = &metav1.Time{Time: *start}
	}
	if ready != "" {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.Time{Time: since}}}
	}
	return p
}

func at(d time.Duration) *time.Time {
	t := testNow.Add(d)
	return &t
}

func TestGroupPodsMatchesUpstream(t *testing.T) {
	now := testNow
	succeeded := corev1.PodSucceeded
	type want struct {
		Ready                     int
		Unready, Missing, Ignored []string
	}
	cases := []struct {
		name    string
		pods    []*corev1.Pod
		samples map[string]sampleset.Sample
		res     corev1.ResourceName
		want    want
	}{
		// replica_calculator_test.go:1756 TestGroupPods "void"
		{name: "void", res: corev1.ResourceCPU},
		// :1765 "count in a ready pod - memory"
		{name: "count in a ready pod - memory", res: corev1.ResourceMemory,
			pods:    []*corev1.Pod{barePod("pod-b", succeeded, nil, "", time.Time{})},
			samples: map[string]sampleset.Sample{"pod-b": {MilliValue: 1, Timestamp: sampleset.Timestamp(now), Window: time.Minute}},
			want:    want{Ready: 1}},
		// :1785 "unready a pod without ready condition - CPU"
		{name: "unready a pod without ready condition - CPU", res: corev1.ResourceCPU,
			pods:    []*corev1.Pod{barePod("pod-a", succeeded, at(0), "", time.Time{})},
			samples: map[string]sampleset.Sample{"pod-a": {MilliValue: 1}},
			want:    want{Unready: []string{"pod-a"}}},
		// :1808 "count in a ready pod with fresh metrics during initialization period - CPU"
		{name: "count in a ready pod with fresh metrics during initialization period - CPU", res: corev1.ResourceCPU,
			pods:    []*corev1.Pod{barePod("pod-b", succeeded, at(-time.Minute), corev1.ConditionTrue, now.Add(-30*time.Second))},
			samples: map[string]sampleset.Sample{"pod-b": {MilliValue: 1, Timestamp: sampleset.Timestamp(now), Window: 30 * time.Second}},
			want:    want{Ready: 1}},
		// :1838 "unready a ready pod without fresh metrics during initialization period - CPU"
		{name: "unready a ready pod without fresh metrics during initialization period - CPU", res: corev1.ResourceCPU,
			pods:    []*corev1.Pod{barePod("pod-b", succeeded, at(-time.Minute), corev1.ConditionTrue, now.Add(-30*time.Second))},
			samples: map[string]sampleset.Sample{"pod-b": {MilliValue: 1, Timestamp: sampleset.Timestamp(now), Window: 60 * time.Second}},
			want:    want{Unready: []string{"pod-b"}}},
		// :1868 "unready an unready pod during initialization period - CPU"
		{name: "unready an unready pod during initialization period - CPU", res: corev1.ResourceCPU,
			pods:    []*corev1.Pod{barePod("pod-a", succeeded, at(-10*time.Minute), corev1.ConditionFalse, now.Add(-9*time.Minute-54*time.Second))},
			samples: map[string]sampleset.Sample{"pod-a": {MilliValue: 1}},
			want:    want{Unready: []string{"pod-a"}}},
		// :1898 "count in a ready pod without fresh metrics after initialization period - CPU"
		{name: "count in a ready pod without fresh metrics after initialization period - CPU", res: corev1.ResourceCPU,
			pods:    []*corev1.Pod{barePod("pod-b", succeeded, at(-3*time.Minute), corev1.ConditionTrue, now.Add(-3*time.Minute))},
			samples: map[string]sampleset.Sample{"pod-b": {MilliValue: 1, Timestamp: sampleset.Timestamp(now.Add(-2 * time.Minute)), Window: time.Minute}},
			want:    want{Ready: 1}},
		// :1928 "count in an unready pod that was ready after initialization period - CPU"
		{name: "count in an unready pod that was ready after initialization period - CPU", res: corev1.ResourceCPU,
			pods:    []*corev1.Pod{barePod("pod-a", succeeded, at(-10*time.Minute), corev1.ConditionFalse, now.Add(-9*time.Minute))},
			samples: map[string]sampleset.Sample{"pod-a": {MilliValue: 1}},
			want:    want{Ready: 1}},
		// :1958 "unready pod that has never been ready after initialization period - CPU" (strictly-after boundary)
		{name: "unready pod that has never been ready after initialization period - CPU", res: corev1.ResourceCPU,
			pods:    []*corev1.Pod{barePod("pod-a", succeeded, at(-10*time.Minute), corev1.ConditionFalse, now.Add(-9*time.Minute-50*time.Second))},
			samples: map[string]sampleset.Sample{"pod-a": {MilliValue: 1}},
			want:    want{Ready: 1}},
		// :1988 "a missing pod"
		{name: "a missing pod", res: corev1.ResourceCPU,
			pods: []*corev1.Pod{barePod("pod-c", succeeded, at(-3*time.Minute), "", time.Time{})},
			want: want{Missing: []string{"pod-c"}}},
		// :2009 "several pods"
		{name: "several pods", res: corev1.ResourceCPU,
			pods: []*corev1.Pod{
				barePod("pod-a", succeeded, at(0), "", time.Time{}),
				barePod("pod-d", succeeded, at(-3*time.Minute), corev1.ConditionTrue, now.Add(-3*time.Minute)),
				barePod("pod-c", succeeded, at(-3*time.Minute), "", time.Time{}),
			},
			samples: map[string]sampleset.Sample{"pod-a": {MilliValue: 1}, "pod-d": {MilliValue: 1}},
			want:    want{Ready: 1, Unready: []string{"pod-a"}, Missing: []string{"pod-c"}}},
		// :2062 "pending pods are unreadied"
		{name: "pending pods are unreadied", res: corev1.ResourceCPU,
			pods: []*corev1.Pod{barePod("unscheduled", corev1.PodPending, nil, "", time.Time{})},
			want: want{Unready: []string{"unscheduled"}}},
		// :2080 "ignore pods with deletion timestamps"
		{name: "ignore pods with deletion timestamps", res: corev1.ResourceCPU,
			pods: func() []*corev1.Pod {
				p := barePod("deleted", corev1.PodPending, nil, "", time.Time{})
				p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
				return []*corev1.Pod{p}
			}(),
			samples: map[string]sampleset.Sample{"deleted": {MilliValue: 1}},
			want:    want{Ignored: []string{"deleted"}}},
		// :2101 "ignore pods in a failed state"
		{name: "ignore pods in a failed state", res: corev1.ResourceCPU,
			pods:    []*corev1.Pod{barePod("failed", corev1.PodFailed, nil, "", time.Time{})},
			samples: map[string]sampleset.Sample{"failed": {MilliValue: 1}},
			want:    want{Ignored: []string{"failed"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &calc{pods: tc.pods, now: now, cpuInit: testCPUInit, delay: testReadinessDelay}
			pts := make([]PodTreatment, len(tc.pods))
			g := c.group(sampleSet(tc.samples), tc.res, pts, requestSpec{})
			got := want{Ready: g.ready}
			for _, pt := range pts {
				switch pt.Class {
				case PodUnready:
					got.Unready = append(got.Unready, pt.Name)
				case PodMissing:
					got.Missing = append(got.Missing, pt.Name)
				case PodIgnored:
					got.Ignored = append(got.Ignored, pt.Name)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("grouping (-want +got):\n%s", diff)
			}
			if g.unready != len(got.Unready) || g.missing != len(got.Missing) || g.ignored != len(got.Ignored) {
				t.Errorf("counts %+v disagree with the per-pod classes %+v", g, got)
			}
		})
	}
}

func cpuContainer(name string, milli int64) corev1.Container {
	c := corev1.Container{Name: name}
	if milli >= 0 {
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(milli, resource.DecimalSI)}
	}
	return c
}

func TestPodRequestMatchesUpstream(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	podLevel := func(milli int64) *corev1.ResourceRequirements {
		return &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(milli, resource.DecimalSI)}}
	}
	spec := func(containers ...corev1.Container) corev1.PodSpec { return corev1.PodSpec{Containers: containers} }
	cases := []struct {
		name      string
		spec      corev1.PodSpec
		container string
		gate      bool
		want      int64
		wantErr   string
	}{
		// replica_calculator_test.go:2141 TestCalculateRequests "Sum container requests if pod-level feature is disabled"
		{name: "sum container requests with the gate off", spec: spec(cpuContainer("container1", 100), cpuContainer("container2", 50)), want: 150},
		// "Pod-level resources are enabled, but not set: fallback to sum container requests"
		{name: "gate on without pod-level requests sums containers", gate: true, spec: spec(cpuContainer("container1", 100), cpuContainer("container2", 50)), want: 150},
		// "Pod-level resources override container requests when feature enabled and pod resources specified"
		{name: "pod-level requests override containers", gate: true,
			spec: func() corev1.PodSpec {
				s := spec(cpuContainer("container1", 100), cpuContainer("container2", 50))
				s.Resources = podLevel(800)
				return s
			}(), want: 800},
		// "Fail if at least one of the containers is missing requests and pod-level feature/requests are not set"
		{name: "a container without request fails", spec: spec(cpuContainer("container1", -1), cpuContainer("container2", 50)),
			wantErr: "missing request for cpu in container container1 of Pod test-pod"},
		// "Pod-level resources override missing container requests when feature enabled and pod resources specified"
		{name: "pod-level requests override a missing container request", gate: true,
			spec: func() corev1.PodSpec {
				s := spec(cpuContainer("container1", -1), cpuContainer("container2", 50))
				s.Resources = podLevel(800)
				return s
			}(), want: 800},
		// "Container: if a container name is specified, calculate requests only for that container"
		{name: "named container only", container: "container1", spec: spec(cpuContainer("container1", 100), cpuContainer("container2", 50)), want: 100},
		// "...only for that container and ignore pod-level requests"
		{name: "named container wins over pod-level requests", gate: true, container: "container1",
			spec: func() corev1.PodSpec {
				s := spec(cpuContainer("container1", 100), cpuContainer("container2", 50))
				s.Resources = podLevel(800)
				return s
			}(), want: 100},
		// "pod with restartable init containers"
		{name: "restartable init containers are counted, plain init containers are not",
			spec: func() corev1.PodSpec {
				s := spec(cpuContainer("container1", 100))
				sidecar := cpuContainer("restartable-container1", 50)
				sidecar.RestartPolicy = &always
				s.InitContainers = []corev1.Container{cpuContainer("init-container1", 20), sidecar}
				return s
			}(), want: 150},
		// replica_calculator_test.go:2343 TestCalculatePodRequestsFromContainers_NonExistentContainer
		{name: "named container that does not exist", container: "non-existent-container",
			spec: spec(cpuContainer("container1", 100)), wantErr: "container non-existent-container not found in Pod test-pod"},
		// Pod-level path follows component-helpers' PodRequests: overhead is added.
		{name: "pod-level requests plus overhead", gate: true,
			spec: func() corev1.PodSpec {
				s := spec(cpuContainer("container1", 100))
				s.Resources = podLevel(800)
				s.Overhead = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(10, resource.DecimalSI)}
				return s
			}(), want: 810},
		{name: "pod-level memory only: cpu falls back to the container aggregate", gate: true,
			spec: func() corev1.PodSpec {
				s := spec(cpuContainer("container1", 100))
				init := cpuContainer("init", 300)
				s.InitContainers = []corev1.Container{init}
				s.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
				return s
			}(), want: 300},
		{name: "pod-level memory only and no cpu anywhere fails", gate: true,
			spec: func() corev1.PodSpec {
				s := spec(cpuContainer("container1", -1))
				s.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
				return s
			}(), wantErr: "missing pod-level request for cpu in Pod test-pod"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "test-pod", Namespace: testNamespace}, Spec: tc.spec}
			got, err := PodRequest(p, tc.container, corev1.ResourceCPU, tc.gate)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got != tc.want {
				t.Errorf("request = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestBuildQuantityMatchesUpstream(t *testing.T) {
	cases := []struct {
		name   string
		res    corev1.ResourceName
		milli  int64
		want   resource.Quantity
		format resource.Format
	}{
		// horizontal_test.go:7295 TestBuildQuantity: memory is binary, everything else decimal.
		{"memory 1000m is one byte", corev1.ResourceMemory, 1000, resource.MustParse("1"), resource.BinarySI},
		{"memory 1000000m is 1000 bytes", corev1.ResourceMemory, 1000000, resource.MustParse("1000"), resource.BinarySI},
		{"cpu 100m", corev1.ResourceCPU, 100, resource.MustParse("100m"), resource.DecimalSI},
		{"cpu 500m", corev1.ResourceCPU, 500, resource.MustParse("500m"), resource.DecimalSI},
		{"cpu 1m", corev1.ResourceCPU, 1, resource.MustParse("1m"), resource.DecimalSI},
		{"custom 200m", "custom", 200, resource.MustParse("200m"), resource.DecimalSI},
		{"custom 300m", "custom", 300, resource.MustParse("300m"), resource.DecimalSI},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := buildQuantity(tc.res, tc.milli)
			if got.Cmp(tc.want) != 0 || got.Format != tc.format {
				t.Errorf("got %s (%s), want %s (%s)", got.String(), got.Format, tc.want.String(), tc.format)
			}
		})
	}
}

// TestGroupRequestOfPodsSharingContainerArrays: pods that share container arrays (as the pod
// cache and the simulator hand them out) get the request PodRequest computes for each pod,
// whether the neighbour shares its arrays, has its own, adds a pod-level request or a sidecar,
// or lacks the request.
func TestGroupRequestOfPodsSharingContainerArrays(t *testing.T) {
	req := func(v string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
	}
	shared := []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: req("250m")}}, {Name: "log", Resources: corev1.ResourceRequirements{Requests: req("50m")}}}
	other := []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: req("400m")}}}
	always := corev1.ContainerRestartPolicyAlways
	sidecar := []corev1.Container{{Name: "proxy", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: req("100m")}}}
	missing := []corev1.Container{{Name: "app"}}
	mk := func(name string, containers, init []corev1.Container, podLevel corev1.ResourceList) *corev1.Pod {
		p := pod(name, testbuild.Ready(corev1.ConditionTrue))
		p.Spec.Containers, p.Spec.InitContainers = containers, init
		if podLevel != nil {
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: podLevel}
		}
		return p
	}
	tests := []struct {
		name string
		pods []*corev1.Pod
	}{
		{"shared, own, shared again", []*corev1.Pod{mk("a", shared, nil, nil), mk("b", shared, nil, nil), mk("c", other, nil, nil), mk("d", shared, nil, nil)}},
		{"a prefix of the shared array", []*corev1.Pod{mk("a", shared, nil, nil), mk("b", shared[:1], nil, nil)}},
		{"shared containers, one pod with a sidecar", []*corev1.Pod{mk("a", shared, nil, nil), mk("b", shared, sidecar, nil), mk("c", shared, nil, nil)}},
		{"shared containers, one pod with a pod-level request", []*corev1.Pod{mk("a", shared, nil, nil), mk("b", shared, nil, req("900m")), mk("c", shared, nil, nil)}},
		{"shared containers lacking the request", []*corev1.Pod{mk("a", missing, nil, nil), mk("b", missing, nil, nil)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			samples := map[string]sampleset.Sample{}
			for _, p := range tc.pods {
				samples[p.Name] = sampleset.Sample{MilliValue: 100, Timestamp: sampleset.Timestamp(testNow.Add(-time.Minute)), Window: 30 * time.Second}
			}
			c := &calc{pods: tc.pods, now: testNow, cpuInit: testCPUInit, delay: testReadinessDelay, podLevel: true}
			pts := make([]PodTreatment, len(tc.pods))
			g := c.group(sampleSet(samples), corev1.ResourceCPU, pts, requestSpec{enabled: true, podLevel: true})
			for i, p := range tc.pods {
				want, err := PodRequest(p, "", corev1.ResourceCPU, true)
				if err != nil {
					if g.requestErr == nil || g.requestErr.Error() != err.Error() {
						t.Errorf("pod %s: request error %v, want %v", p.Name, g.requestErr, err)
					}
					break
				}
				if pts[i].Request != want {
					t.Errorf("pod %s: request %dm, want %dm", p.Name, pts[i].Request, want)
				}
			}
		})
	}
}

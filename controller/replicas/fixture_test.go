package replicas

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// timeT shortens fixture tables.
type timeT = time.Time

// calcFixture restates upstream's calcScenario (replica_calculator_test.go:100-121): pods
// test-pod-<i> with two containers, per-container cpu requests, per-container usage levels
// reported through a metrics client that drops pods lacking the resource.
type calcFixture struct {
	current int32
	// requests is the per-container cpu request of pod i ("1.0"); pods past its end have none.
	requests []string
	// levels[i][j] is the usage of container j+1 of the pod reported at index i.
	levels [][]int64
	// metricNames overrides the pod name a level is reported for.
	metricNames []string
	container   string
	readiness   []corev1.ConditionStatus
	start       []time.Time
	phase       []corev1.PodPhase
	deleted     []bool
	// values are custom-metric samples per pod, or external samples / the object value.
	values []int64
}

// perContainer is upstream's makePodMetricLevels: every container of pod i uses v[i].
func perContainer(v ...int64) [][]int64 {
	out := make([][]int64, len(v))
	for i, x := range v {
		out[i] = []int64{x, x}
	}
	return out
}

func sameRequests(n int, q string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = q
	}
	return out
}

func (f calcFixture) pods() []*corev1.Pod {
	n := int(f.current)
	if len(f.phase) > n {
		n = len(f.phase)
	}
	out := make([]*corev1.Pod, 0, n)
	for i := 0; i < n; i++ {
		var opts []testbuild.PodOption
		if i < len(f.readiness) {
			opts = append(opts, testbuild.Ready(f.readiness[i]))
		}
		if i < len(f.start) {
			opts = append(opts, testbuild.StartedAt(f.start[i]))
		}
		if i < len(f.phase) {
			opts = append(opts, testbuild.Phase(f.phase[i]))
		}
		if i < len(f.deleted) && f.deleted[i] {
			opts = append(opts, testbuild.DeletedAt(testNow))
		}
		if i < len(f.requests) {
			opts = append(opts, testbuild.CPURequest(f.requests[i]))
		}
		out = append(out, pod(podName(i), opts...))
	}
	return out
}

// resourceData is what upstream's resource metrics client returns for the levels: the sum over
// containers (a pod with a container lacking the metric is left out), or the named container.
func (f calcFixture) resourceData() MetricData {
	if len(f.levels) == 0 {
		return MetricData{Err: errors.New("no metrics returned from resource metrics API")}
	}
	m := make(map[string]sampleset.Sample, len(f.levels))
	for i, lv := range f.levels {
		name := podName(i)
		if i < len(f.metricNames) {
			name = f.metricNames[i]
		}
		s := sampleset.Sample{Window: time.Minute}
		switch {
		case f.container != "":
			idx := int(f.container[len(f.container)-1]-'0') - 1
			if idx >= len(lv) {
				continue
			}
			s.MilliValue = lv[idx]
		case len(lv) < 2:
			continue
		default:
			s.MilliValue = lv[0] + lv[1]
		}
		m[name] = s
	}
	return MetricData{PodSamples: sampleSet(m)}
}

// customData reports values per pod as upstream's fake custom metrics client does.
func (f calcFixture) customData() MetricData {
	return podValues(f.values...)
}

func hasError(err error, want string) bool {
	return err != nil && strings.Contains(err.Error(), want)
}

// checkMetric compares one metric's proposal with an upstream calculator expectation.
func checkMetric(t *testing.T, d Decision, wantReplicas int32, wantErr string) *MetricResult {
	t.Helper()
	if len(d.Metrics) != 1 {
		t.Fatalf("got %d metric results, want 1 (phase %s, err %v)", len(d.Metrics), d.Phase, d.Err)
	}
	r := &d.Metrics[0]
	if wantErr != "" {
		if !hasError(r.Err, wantErr) {
			t.Fatalf("metric error = %v, want it to contain %q", r.Err, wantErr)
		}
		if d.Phase != PhaseMetricsFailed {
			t.Errorf("phase = %s, want %s", d.Phase, PhaseMetricsFailed)
		}
		return r
	}
	if r.Err != nil {
		t.Fatalf("unexpected metric error: %v", r.Err)
	}
	if r.Replicas != wantReplicas {
		t.Errorf("replicas = %d, want %d\ntrace:\n%s", r.Replicas, wantReplicas, traceText(d))
	}
	return r
}

func traceText(d Decision) string {
	var b strings.Builder
	for _, s := range d.Trace {
		fmt.Fprintf(&b, "  [%s %d] %s\n", s.Stage, s.Metric, s.Text)
	}
	return b.String()
}

package sim

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim/load"
)

// scrapedPod is a world with one Ready pod started at start, whose demand is cpuMilli; the
// scrapes happen at the given offsets from the start.
func scrapedPod(t *testing.T, cpuMilli string, start time.Time, scrapes ...time.Duration) (*sampleset.Set, error) {
	t.Helper()
	s := Spec{Model: DefaultModel(), Load: curve(t, "time,cpu\n0,"+cpuMilli+"\n"), Workload: Workload{Name: "web", Replicas: 1, Pod: podSpec("200m")},
		Variants: []Variant{{Name: "v", HPA: cpuHPA(50, 1, 10, nil)}}, Duration: time.Hour, Start: start}
	if err := s.normalize(); err != nil {
		t.Fatal(err)
	}
	w := newWorld(&s, s.Variants[0])
	p := w.newPod(0)
	p.started, p.ready = 0, 0
	w.now = 0
	w.startPod(p)
	w.readyPod(p)
	w.setDemand()
	w.rerate()
	for _, d := range scrapes {
		w.advance(d)
		w.scrape(d)
	}
	w.now = scrapes[len(scrapes)-1]
	got, _, err := w.podResource(corev1.ResourceCPU, "")
	return got, err
}

func TestMetricsServerEmulation(t *testing.T) {
	whole := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	half := whole.Add(500 * time.Millisecond)
	for _, tc := range []struct {
		name    string
		cpu     string
		start   time.Time
		scrapes []time.Duration
		want    *sampleset.Sample // nil: no sample for the pod
	}{
		{name: "one scrape of a pod started 5 s before is not enough", cpu: "100", start: whole,
			scrapes: []time.Duration{5 * time.Second}},
		{name: "the second scrape gives the usage over the window between them", cpu: "100", start: whole,
			scrapes: []time.Duration{5 * time.Second, 20 * time.Second},
			want:    &sampleset.Sample{MilliValue: 100, Timestamp: sampleset.Timestamp(whole.Add(20 * time.Second)), Window: 15 * time.Second}},
		{name: "a container 10 s to one interval old is measured from its start at its first scrape", cpu: "100", start: whole,
			scrapes: []time.Duration{12 * time.Second},
			want:    &sampleset.Sample{MilliValue: 100, Timestamp: sampleset.Timestamp(whole.Add(12 * time.Second)), Window: 12 * time.Second}},
		{name: "the start is read in whole seconds, so the first window is longer than the run", cpu: "90", start: half,
			scrapes: []time.Duration{12 * time.Second},
			// 90m for 12 s over a 12.5 s window: 86.4m, read up to whole millicores.
			want: &sampleset.Sample{MilliValue: 87, Timestamp: sampleset.Timestamp(whole.Add(12 * time.Second)), Window: 12500 * time.Millisecond}},
		{name: "later scrapes keep the last two points: the window is one interval", cpu: "100", start: whole,
			scrapes: []time.Duration{15 * time.Second, 30 * time.Second, 45 * time.Second},
			want:    &sampleset.Sample{MilliValue: 100, Timestamp: sampleset.Timestamp(whole.Add(45 * time.Second)), Window: 15 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := scrapedPod(t, tc.cpu, tc.start, tc.scrapes...)
			if tc.want == nil {
				if err == nil {
					t.Errorf("samples %v, want none", got.Map())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s, ok := got.Get("web-000001")
			if !ok || s != *tc.want {
				t.Errorf("sample %+v (present %v), want %+v", s, ok, *tc.want)
			}
		})
	}
}

func TestDemandIsSplitEvenlyOverReadyPodsWithAnIdleFloor(t *testing.T) {
	c, err := load.Parse("l.csv", []byte("time,cpu,memory\n0,100,300000000\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := Spec{Model: DefaultModel(), Load: c, Workload: Workload{Replicas: 0, Pod: podSpec("200m")},
		Variants: []Variant{{Name: "v", HPA: cpuHPA(50, 1, 10, nil)}}, Duration: time.Hour}
	if err := s.normalize(); err != nil {
		t.Fatal(err)
	}
	w := newWorld(&s, s.Variants[0])
	w.now = 0
	w.setDemand()
	var pods []*pod
	for range 3 {
		p := w.newPod(0)
		p.started = 0
		w.startPod(p)
		pods = append(pods, p)
	}
	w.readyPod(pods[0])
	w.readyPod(pods[1])
	w.rerate()
	want := []struct{ cpu, mem int64 }{{50, 150000000}, {50, 150000000}, {1, 4 << 20}}
	for i, p := range pods {
		if p.cpuMilli != want[i].cpu || p.memBytes != want[i].mem {
			t.Errorf("pod %d (ready %v): %dm, %d bytes; want %dm, %d bytes", i, p.isReady, p.cpuMilli, p.memBytes, want[i].cpu, want[i].mem)
		}
	}
	if c := pods[2].obj.Status.Conditions[0]; c.Status != corev1.ConditionFalse || c.LastTransitionTime != metav1.NewTime(s.Start) {
		t.Errorf("a started pod not yet Ready has condition %+v", c)
	}
}

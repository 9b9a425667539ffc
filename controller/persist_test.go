package controller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller/history/annotation"
)

// deliver puts the HPA as stored into the informer cache, as a watch would.
func (f *fixture) deliver(t *testing.T, name string) *autoscalingv2.HorizontalPodAutoscaler {
	t.Helper()
	stored := f.storedHPA(t, name)
	if err := f.c.hpaFactory.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetIndexer().Update(stored); err != nil {
		t.Fatal(err)
	}
	return stored
}

func persisting() Options {
	o := DefaultOptions()
	o.PersistHistory = true
	return o
}

// A scale-down held by the window (5m, the controller's default) ends when the window that
// began with the last high recommendation ends, also across a restart: with the history
// persisted the restarted controller scales down then; memory-only, it waits a whole window
// from its start, as upstream does after a restart: its seed, made just before its first
// decision, is out of the window at the sync a whole window later.
func TestPersistedHistoryEndsAHeldScaleDownOnTimeAfterARestart(t *testing.T) {
	f := newFixture(t, persisting(), []*autoscalingv2.HorizontalPodAutoscaler{newHPA("web")}, webPods(), map[string]int32{"web": 2},
		cpuMetrics(cpuAt(50, "web-1", "web-2")))
	if err := f.sync(t, "web"); err != nil {
		t.Fatal(err)
	}
	first := f.deliver(t, "web")
	if _, ok := first.Annotations[annotation.Key]; !ok {
		t.Fatalf("the first decision wrote no history: annotations %v", first.Annotations)
	}

	// Steady state: the same recommendation again costs no request at all.
	f.kube.ClearActions()
	f.clock.Step(15 * time.Second)
	if err := f.sync(t, "web"); err != nil {
		t.Fatal(err)
	}
	if got := f.kubeActions(); len(got) != 0 {
		t.Fatalf("a repeated recommendation made API calls %q, want none", got)
	}

	// The load drops: 1 is recommended, 2 holds for the window; one status write carries both.
	f.metrics.Set(corev1.ResourceCPU, cpuAt(10, "web-1", "web-2"))
	f.clock.Step(15 * time.Second)
	lastHigh := f.clock.Now().Add(-15 * time.Second)
	if err := f.sync(t, "web"); err != nil {
		t.Fatal(err)
	}
	if got := f.kubeActions(); !slices.Equal(got, []string{"update horizontalpodautoscalers/status dryRun=[]"}) {
		t.Fatalf("the held scale-down made API calls %q, want one status write", got)
	}
	held := f.deliver(t, "web")
	rec, err := annotation.Decode(held.Annotations[annotation.Key])
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Recs) != 2 || rec.Recs[0][0] != 2 || rec.Recs[1][0] != 1 || !rec.Open {
		t.Fatalf("persisted %s, want 2 (closed) then 1 (open)", held.Annotations[annotation.Key])
	}

	restart := func(persist bool, at time.Time) *fixture {
		opts := DefaultOptions()
		opts.PersistHistory = persist
		g := newFixture(t, opts, []*autoscalingv2.HorizontalPodAutoscaler{held}, webPods(), map[string]int32{"web": 2}, cpuMetrics(cpuAt(10, "web-1", "web-2")))
		g.clock.SetTime(at)
		var notes []string
		g.c.note = func(s string) { notes = append(notes, s) }
		g.c.restoreHistory(context.Background())
		if persist && (len(notes) != 1 || !strings.Contains(notes[0], "restored the decision history of 1 HPA(s)")) {
			t.Fatalf("restore said %q", notes)
		}
		return g
	}
	for _, tc := range []struct {
		persist bool
		// scale-down time after lastHigh
		want time.Duration
	}{{true, 5*time.Minute + 15*time.Second}, {false, 4*time.Minute + 5*time.Minute}} {
		g := restart(tc.persist, lastHigh.Add(4*time.Minute))
		var scaledAt time.Duration
		for step := 0; step < 60 && scaledAt == 0; step++ {
			if err := g.sync(t, "web"); err != nil {
				t.Fatal(err)
			}
			g.deliver(t, "web")
			if slices.ContainsFunc(g.scales.recorded(), func(a string) bool { return strings.HasPrefix(a, "update") }) {
				scaledAt = g.clock.Now().Sub(lastHigh)
			}
			g.clock.Step(15 * time.Second)
		}
		if scaledAt != tc.want {
			t.Errorf("persist-history=%v: scaled down %v after the last high recommendation, want %v (the window is 5m)", tc.persist, scaledAt, tc.want)
		}
	}
}

func TestAnUnusableHistoryIsOneLineAndUpstreamsFreshStart(t *testing.T) {
	bad := newHPA("web")
	bad.Annotations = map[string]string{annotation.Key: `{"v":1,"by":"kubectl-hpa","at":"2026-11-30T12:00:00Z","uid":"uid-web","hz":[300,0,0],"open":tr`}
	f := newFixture(t, persisting(), []*autoscalingv2.HorizontalPodAutoscaler{bad}, webPods(), map[string]int32{"web": 2}, cpuMetrics(cpuAt(50, "web-1", "web-2")))
	var notes []string
	f.c.note = func(s string) { notes = append(notes, s) }
	f.c.restoreHistory(context.Background())
	want := "ignoring the decision history recorded on HPA default/web (annotation hpa.kubectl-hpa.io/history): truncated JSON"
	if len(notes) != 1 || !strings.HasPrefix(notes[0], want) {
		t.Fatalf("notes %q, want one starting %q", notes, want)
	}
	if err := f.sync(t, "web"); err != nil {
		t.Fatal(err)
	}
	if got := f.deliver(t, "web").Annotations[annotation.Key]; !strings.HasPrefix(got, `{"v":1,"by":"kubectl-hpa"`) || strings.HasSuffix(got, "tr") {
		t.Fatalf("the first decision did not replace the unusable record: %s", got)
	}
}

func TestMemoryOnlyRemovesTheAnnotationWithItsNextStatusWrite(t *testing.T) {
	f := newFixture(t, persisting(), []*autoscalingv2.HorizontalPodAutoscaler{newHPA("web")}, webPods(), map[string]int32{"web": 2},
		cpuMetrics(cpuAt(50, "web-1", "web-2")))
	if err := f.sync(t, "web"); err != nil {
		t.Fatal(err)
	}
	g := newFixture(t, DefaultOptions(), []*autoscalingv2.HorizontalPodAutoscaler{f.storedHPA(t, "web")}, webPods(), map[string]int32{"web": 2},
		cpuMetrics(cpuAt(90, "web-1", "web-2")))
	if err := g.sync(t, "web"); err != nil {
		t.Fatal(err)
	}
	if a, ok := g.storedHPA(t, "web").Annotations[annotation.Key]; ok {
		t.Fatalf("memory-only left the annotation %s", a)
	}
}

package sim

import (
	"testing"
	"time"
)

func TestScaleDownRemovesWhatTheReplicaSetRanksFirst(t *testing.T) {
	s := Spec{Model: DefaultModel(), Load: curve(t, "time,cpu\n0,100\n60,100\n"), Workload: Workload{Replicas: 0, Pod: podSpec("200m")},
		Variants: []Variant{{Name: "v", HPA: cpuHPA(50, 1, 10, nil)}}, Duration: time.Hour}
	if err := s.normalize(); err != nil {
		t.Fatal(err)
	}
	w := newWorld(&s, s.Variants[0])
	old := w.newPod(0)
	old.started, old.ready = 0, time.Second
	w.startPod(old)
	w.readyPod(old)
	young := w.newPod(time.Minute)
	young.started, young.ready = time.Minute, 2*time.Minute
	w.startPod(young)
	w.readyPod(young)
	starting := w.newPod(3 * time.Minute)
	starting.started = 3 * time.Minute
	w.startPod(starting)
	pending := w.newPod(3 * time.Minute)
	w.specReplicas = 5
	at := 4 * time.Minute
	w.pending = []time.Duration{at}

	w.scaleTo(1, at)
	if len(w.pending) != 0 {
		t.Errorf("%d creations still pending, want the one cancelled first", len(w.pending))
	}
	deleted := func(p *pod) bool { return p.deleting }
	for _, tc := range []struct {
		name string
		p    *pod
		want bool
	}{
		{"a pod not started", pending, true},
		{"a started pod not yet Ready", starting, true},
		{"the pod Ready for the shortest time", young, true},
		{"the pod Ready the longest", old, false},
	} {
		if got := deleted(tc.p); got != tc.want {
			t.Errorf("%s: deleted %v, want %v", tc.name, got, tc.want)
		}
	}
	if d := w.m.PodCreateDelay; pending.deleteAt != at+d {
		t.Errorf("deleted at %s, want the write plus the create delay %s", pending.deleteAt, d)
	}
}

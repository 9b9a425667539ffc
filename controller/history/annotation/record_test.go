package annotation

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
)

var t0 = time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)

// hpaWith is an HPA whose behavior has both windows w and one policy per direction.
func hpaWith(upWindow, downWindow, upPeriod, downPeriod int32) *autoscalingv2.HorizontalPodAutoscaler {
	return testbuild.HPA("shop", "web", testbuild.UID("uid-1"), testbuild.Max(10), testbuild.Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &upWindow,
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: upPeriod}}},
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &downWindow,
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: downPeriod}}},
	}))
}

// window is what a stabilization window reads: the highest and lowest recommendation newer
// than cutoff (ok false when there is none).
func window(recs []replicas.Recommendation, cutoff time.Time) (hi, lo int32, ok bool) {
	for _, r := range recs {
		if !r.Timestamp.After(cutoff) {
			continue
		}
		if !ok {
			hi, lo, ok = r.Replicas, r.Replicas, true
		}
		hi, lo = max(hi, r.Replicas), min(lo, r.Replicas)
	}
	return hi, lo, ok
}

func sum(events []replicas.ScaleEvent, cutoff time.Time) int32 {
	var n int32
	for _, e := range events {
		if e.Timestamp.After(cutoff) {
			n += e.ReplicaChange
		}
	}
	return n
}

func randomHistory(r *rand.Rand, now time.Time, hz Horizon) replicas.History {
	span := func(s int32) time.Duration { return time.Duration(r.Int64N(int64(2*s)*1000+1)) * time.Millisecond }
	h := replicas.History{Recommendations: []replicas.Recommendation{}}
	for range r.IntN(40) {
		h.Recommendations = append(h.Recommendations, replicas.Recommendation{Replicas: int32(r.IntN(12)), Timestamp: now.Add(-span(hz.Window))})
	}
	// The decision that writes the record recommends at now.
	h.Recommendations = append(h.Recommendations, replicas.Recommendation{Replicas: int32(r.IntN(12)), Timestamp: now})
	r.Shuffle(len(h.Recommendations), func(i, j int) {
		h.Recommendations[i], h.Recommendations[j] = h.Recommendations[j], h.Recommendations[i]
	})
	for range r.IntN(6) {
		h.ScaleUpEvents = append(h.ScaleUpEvents, replicas.ScaleEvent{ReplicaChange: 1 + int32(r.IntN(4)), Timestamp: now.Add(-span(hz.UpPeriod)), Outdated: r.IntN(8) == 0})
	}
	for range r.IntN(6) {
		h.ScaleDownEvents = append(h.ScaleDownEvents, replicas.ScaleEvent{ReplicaChange: 1 + int32(r.IntN(4)), Timestamp: now.Add(-span(hz.DownPeriod))})
	}
	return h
}

// The property the record rests on: for any decision at or after the record's time, with any
// window up to the horizon, the compacted history (also after a trip through the annotation)
// gives the same highest and lowest recommendation and the same scale events per period as
// the whole history.
func TestCompactIsExactForEveryLaterWindow(t *testing.T) {
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 7))
		hz := Horizon{Window: int32(r.IntN(601)), UpPeriod: 1 + int32(r.IntN(300)), DownPeriod: 1 + int32(r.IntN(300))}
		now := t0.Add(time.Duration(r.Int64N(1e6)) * time.Millisecond)
		full := randomHistory(r, now, hz)
		c := Compact(full, hz, now)

		hpa := hpaWith(hz.Window, int32(r.IntN(int(hz.Window)+1)), hz.UpPeriod, hz.DownPeriod)
		rec, err := Decode(New(c, string(hpa.UID), "node-a", now, 15*time.Second, hz).Encode())
		if err != nil {
			t.Fatalf("seed %d: decoding what was encoded: %v", seed, err)
		}
		restored, err := Restore(rec, hpa, replicas.DefaultConfig(), "kubectl-hpa", now, now)
		if err != nil {
			t.Fatalf("seed %d: restoring: %v", seed, err)
		}
		for k := range 50 {
			later := now.Add(time.Duration(r.Int64N(int64(hz.Window)*1000+10_000)) * time.Millisecond)
			if k == 0 {
				later = now
			}
			w := seconds(int32(r.IntN(int(hz.Window) + 1)))
			wantHi, wantLo, wantOK := window(full.Recommendations, later.Add(-w))
			for name, got := range map[string][]replicas.Recommendation{"compacted": c.Recommendations, "restored": restored.History.Recommendations} {
				hi, lo, ok := window(got, later.Add(-w))
				if hi != wantHi || lo != wantLo || ok != wantOK {
					t.Fatalf("seed %d, %s, decision %v later, window %v: got hi %d lo %d (%v), the whole history gives hi %d lo %d (%v)\nfull %v\ngot %v",
						seed, name, later.Sub(now), w, hi, lo, ok, wantHi, wantLo, wantOK, full.Recommendations, got)
				}
			}
			for _, dir := range []struct {
				name       string
				period     int32
				full, kept []replicas.ScaleEvent
			}{
				{"up", hz.UpPeriod, full.ScaleUpEvents, restored.History.ScaleUpEvents},
				{"down", hz.DownPeriod, full.ScaleDownEvents, restored.History.ScaleDownEvents},
			} {
				p := seconds(int32(r.IntN(int(dir.period)) + 1))
				var live []replicas.ScaleEvent
				for _, e := range dir.full {
					if !e.Outdated {
						live = append(live, e)
					}
				}
				if got, want := sum(dir.kept, later.Add(-p)), sum(live, later.Add(-p)); got != want {
					t.Fatalf("seed %d: %s events in the %v before %v later: %d, the whole history %d", seed, dir.name, p, later.Sub(now), got, want)
				}
			}
		}
	}
}

func TestCompactKeepsOnlyEntriesThatCanStillWin(t *testing.T) {
	at := func(s int, n int32) replicas.Recommendation {
		return replicas.Recommendation{Replicas: n, Timestamp: t0.Add(time.Duration(s) * time.Second)}
	}
	h := replicas.History{Recommendations: []replicas.Recommendation{at(-400, 9), at(-100, 8), at(-90, 8), at(-80, 2), at(-60, 5), at(-30, 3), at(-15, 3), at(0, 3)}}
	got := Compact(h, Horizon{Window: 300}, t0).Recommendations
	want := []replicas.Recommendation{at(-90, 8), at(-80, 2), at(-60, 5), at(0, 3)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("compacted (-want +got):\n%s", diff)
	}
}

func TestAFlatHistoryIsOneOpenEntryAndRewritesNothing(t *testing.T) {
	hz := Horizon{Window: 300, UpPeriod: 15, DownPeriod: 15}
	var h replicas.History
	var last Record
	for i := range 40 {
		now := t0.Add(time.Duration(i) * 15 * time.Second)
		h.Recommendations = append(h.Recommendations, replicas.Recommendation{Replicas: 4, Timestamp: now})
		rec := New(Compact(h, hz, now), "uid-1", "node-a", now, 15*time.Second, hz)
		if len(rec.Recs) != 1 || !rec.Open {
			t.Fatalf("sync %d: %+v, want one open entry", i, rec)
		}
		if i > 0 && !last.Same(rec) {
			t.Fatalf("sync %d: a repeated recommendation asks for a new write: %s after %s", i, rec.Encode(), last.Encode())
		}
		if i == 0 {
			last = rec
		}
	}
	h.Recommendations = append(h.Recommendations, replicas.Recommendation{Replicas: 1, Timestamp: t0.Add(40 * 15 * time.Second)})
	rec := New(Compact(h, hz, t0.Add(600*time.Second)), "uid-1", "node-a", t0.Add(600*time.Second), 15*time.Second, hz)
	if last.Same(rec) {
		t.Fatalf("a new recommendation (1 after 4) did not ask for a write: %s", rec.Encode())
	}
	if got := rec.Encode(); len(got) > 200 {
		t.Fatalf("record of two entries is %d bytes: %s", len(got), got)
	}
}

func TestDecodeRefusesWhatIsNotAUsableRecord(t *testing.T) {
	good := New(replicas.History{Recommendations: []replicas.Recommendation{{Replicas: 3, Timestamp: t0}}}, "uid-1", "a", t0, time.Second, Horizon{Window: 60}).Encode()
	for _, tc := range []struct{ name, value, reason string }{
		{"not JSON", "hello", "not valid JSON"},
		{"truncated", good[:len(good)/2], "truncated JSON"},
		{"foreign", `{"v":1,"by":"someone-else"}`, "not a kubectl-hpa history record"},
		{"future version", strings.Replace(good, `"v":1`, `"v":2`, 1), "format version 2 is newer than this kubectl-hpa reads (1)"},
		{"too large", `{"v":1,"by":"kubectl-hpa","pad":"` + strings.Repeat("x", MaxBytes) + `"}`, "larger than 64 KiB"},
		{"unknown field", strings.Replace(good, `"v":1`, `"v":1,"extra":true`, 1), "not a valid version 1 record"},
		{"negative replicas", strings.Replace(good, `"rec":[[3,`, `"rec":[[-3,`, 1), "rec[0]: replica count -3 out of range"},
		{"no uid", strings.Replace(good, `"uid":"uid-1"`, `"uid":""`, 1), "no HPA uid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.value)
			var e *Error
			if !errors.As(err, &e) || !strings.Contains(e.Reason, tc.reason) {
				t.Fatalf("Decode: %v, want an *Error with %q", err, tc.reason)
			}
		})
	}
	if _, err := Decode(good); err != nil {
		t.Fatalf("a good record: %v", err)
	}
}

func TestRestoreIgnoresWhatNoLongerApplies(t *testing.T) {
	hpa := hpaWith(0, 120, 60, 60)
	hz := HorizonOf(hpa, replicas.DefaultConfig())
	h := replicas.History{
		Recommendations: []replicas.Recommendation{{Replicas: 4, Timestamp: t0.Add(-90 * time.Second)}, {Replicas: 1, Timestamp: t0}},
		ScaleUpEvents:   []replicas.ScaleEvent{{ReplicaChange: 2, Timestamp: t0.Add(-30 * time.Second)}},
	}
	rec := New(Compact(h, hz, t0), string(hpa.UID), "node-a", t0, 5*time.Second, hz)
	cfg := replicas.DefaultConfig()

	t.Run("the open recommendation lasts until the writer stopped", func(t *testing.T) {
		got, err := Restore(rec, hpa, cfg, "kubectl-hpa", t0.Add(20*time.Second), t0.Add(12*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		want := replicas.History{
			Recommendations: []replicas.Recommendation{{Replicas: 4, Timestamp: t0.Add(-90 * time.Second)}, {Replicas: 1, Timestamp: t0.Add(12 * time.Second)}},
			ScaleUpEvents:   []replicas.ScaleEvent{{ReplicaChange: 2, Timestamp: t0.Add(-30 * time.Second)}},
		}
		if diff := cmp.Diff(want, got.History); diff != "" {
			t.Fatalf("restored (-want +got):\n%s", diff)
		}
	})
	t.Run("entries past the horizon are dropped", func(t *testing.T) {
		got, err := Restore(rec, hpa, cfg, "kubectl-hpa", t0.Add(40*time.Second), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Dropped != 2 || len(got.History.Recommendations) != 1 || got.History.ScaleUpEvents != nil {
			t.Fatalf("restored 40s later: %+v, want only the open recommendation (the 4 and the scale event dropped)", got)
		}
	})
	t.Run("nothing left is the core's seed", func(t *testing.T) {
		got, err := Restore(rec, hpa, cfg, "kubectl-hpa", t0.Add(time.Hour), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if got.History.Recommendations != nil {
			t.Fatalf("restored an hour later: %+v, want nil recommendations", got.History)
		}
	})
	t.Run("another HPA", func(t *testing.T) {
		other := hpa.DeepCopy()
		other.UID = "uid-2"
		if _, err := Restore(rec, other, cfg, "kubectl-hpa", t0, time.Time{}); err == nil || !strings.Contains(err.Error(), "recorded for another HPA") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("another controller wrote status since", func(t *testing.T) {
		owned := hpa.DeepCopy()
		owned.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Subresource: "status", Time: &metav1.Time{Time: t0.Add(5 * time.Second)}}}
		if _, err := Restore(rec, owned, cfg, "kubectl-hpa", t0.Add(10*time.Second), time.Time{}); err == nil || !strings.Contains(err.Error(), "kube-controller-manager wrote the HPA's status") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("a window that grew is said", func(t *testing.T) {
		got, err := Restore(rec, hpaWith(0, 300, 60, 60), cfg, "kubectl-hpa", t0.Add(time.Second), time.Time{})
		if err != nil || len(got.Notes) != 1 || !strings.Contains(got.Notes[0], "grew from 120s to 300s") {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
}

// FuzzDecode: no annotation value makes Decode or Restore panic, a value Decode accepts
// encodes back to a record that decodes the same, and what Restore gives the core is sane.
func FuzzDecode(f *testing.F) {
	hpa := hpaWith(0, 120, 60, 60)
	f.Add(New(replicas.History{Recommendations: []replicas.Recommendation{{Replicas: 4, Timestamp: t0.Add(-time.Minute)}, {Replicas: 1, Timestamp: t0}},
		ScaleUpEvents: []replicas.ScaleEvent{{ReplicaChange: 2, Timestamp: t0.Add(-10 * time.Second)}}}, "uid-1", "a", t0, time.Second, Horizon{120, 60, 60}).Encode())
	f.Add(`{"v":1,"by":"kubectl-hpa","at":"2026-12-01T14:00:00Z","uid":"uid-1","sync":15000,"hz":[120,60,60],"open":true,"rec":[[1,0]]}`)
	f.Add(`{"v":2,"by":"kubectl-hpa"}`)
	f.Add(`{"v":1,"by":"kubectl-hpa","at":"2026-12-01T14:00:00Z","uid":"uid-1","hz":[1,2],"rec":[[1,-5]],"down":[[0,1]]}`)
	f.Fuzz(func(t *testing.T, value string) {
		rec, err := Decode(value)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Decode error %T is not an *Error: %v", err, err)
			}
			return
		}
		again, err := Decode(rec.Encode())
		if err != nil {
			t.Fatalf("re-decoding %s: %v", rec.Encode(), err)
		}
		if diff := cmp.Diff(rec, again); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
		now := t0.Add(30 * time.Second)
		got, err := Restore(rec, hpa, replicas.DefaultConfig(), "kubectl-hpa", now, now)
		if err != nil {
			return
		}
		for _, r := range got.History.Recommendations {
			if r.Replicas < 0 || r.Timestamp.After(now) || !r.Timestamp.After(now.Add(-120*time.Second)) {
				t.Fatalf("restored %+v outside [0, now] or the window", r)
			}
		}
		for _, e := range append(got.History.ScaleUpEvents, got.History.ScaleDownEvents...) {
			if e.ReplicaChange < 1 || e.Timestamp.After(now) || !e.Timestamp.After(now.Add(-60*time.Second)) {
				t.Fatalf("restored event %+v outside the period", e)
			}
		}
	})
}

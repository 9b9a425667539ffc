package annotation

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// A Lease identity as run in a Deployment writes it (pod name and a UUID) and an HPA's UID.
const (
	benchHolder = "kubectl-hpa-7d9f8b6c4-x2x9q_0f8c6f8e-7f5a-4c1e-9a43-2d1e5c7b9a10"
	benchUID    = "5b0c3d6e-2f1a-4b8c-9d7e-6a5f4e3d2c1b"
)

// BenchmarkRecordOfAnHour replays an hour of decisions of one HPA (15s sync, upstream's 5m
// scale-down window and default policies) as run persists them, and reports the record's size
// and how often it asks for a write of its own: "steady" recommends the same count at every
// sync, "noisy" a count that wanders by one at every sync (a worst case: the newest value changes
// almost always), "waves" a load that rises and falls over 10 minutes with a scale event per step.
func BenchmarkRecordOfAnHour(b *testing.B) {
	hz := Horizon{Window: 300, UpPeriod: 15, DownPeriod: 15}
	for _, load := range []struct {
		name string
		next func(r *rand.Rand, i int, prev int32) int32
	}{
		{"steady", func(*rand.Rand, int, int32) int32 { return 6 }},
		{"noisy", func(r *rand.Rand, _ int, prev int32) int32 { return max(1, min(20, prev+int32(r.IntN(3))-1)) }},
		{"waves", func(_ *rand.Rand, i int, _ int32) int32 {
			// 40 syncs per 10 minutes: up from 2 to 12 and back down.
			p := i % 40
			return int32(2 + min(p, 40-p)/2)
		}},
	} {
		b.Run(load.name, func(b *testing.B) {
			var bytes, maxBytes, writes, records int
			for b.Loop() {
				r := rand.New(rand.NewPCG(1, 2))
				var h replicas.History
				var last Record
				cur := int32(6)
				for i := range 240 {
					now := t0.Add(time.Duration(i) * 15 * time.Second)
					next := load.next(r, i, cur)
					h.Recommendations = append(h.Recommendations, replicas.Recommendation{Replicas: next, Timestamp: now})
					if next != cur {
						ev := replicas.ScaleEvent{ReplicaChange: abs(next - cur), Timestamp: now}
						if next > cur {
							h.ScaleUpEvents = append(h.ScaleUpEvents, ev)
						} else {
							h.ScaleDownEvents = append(h.ScaleDownEvents, ev)
						}
						cur = next
					}
					h = Compact(h, hz, now)
					rec := New(h, benchUID, benchHolder, now, 15*time.Second, hz)
					n := len(rec.Encode())
					bytes += n
					maxBytes = max(maxBytes, n)
					records++
					if i == 0 || !last.Same(rec) {
						writes++
						last = rec
					}
				}
			}
			b.ReportMetric(float64(bytes)/float64(records), "bytes/record")
			b.ReportMetric(float64(maxBytes), "max-bytes")
			b.ReportMetric(float64(writes)/float64(records), "writes/sync")
		})
	}
}

func abs(n int32) int32 {
	if n < 0 {
		return -n
	}
	return n
}

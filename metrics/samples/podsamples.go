package samples

import (
	"hash/maphash"
	"iter"
	"maps"
	"slices"
)

// PodSamples is one metric's samples, at most one per pod name, in the order they were added,
// with an index by name. A nil *PodSamples is empty. Reads may run concurrently; Add may not.
//
// It is what the metrics layer hands the decision core, which looks every selected pod up in
// it once per sync. A map[string]PodSample did that job before; this holds the same data
// without a pointer in any of its memory (the names are packed into one byte slice, the index
// holds positions), so the garbage collector never scans it, and a sync allocates three
// blocks for it instead of a map's tables of strings. At a thousand pods, building the map and
// collecting it was most of a decision's cost (controller/replicas BenchmarkDecide).
type PodSamples struct {
	recs []podRecord
	// slots is an open-addressing index with linear probing; its length is a power of two at
	// least twice len(recs). 0 is an empty slot, otherwise a position in recs plus one.
	slots []int32
	seed  maphash.Seed
}

type podRecord struct {
	pod    string
	sample PodSample
}

// minSlots keeps a tiny container's index from growing at once.
const minSlots = 8

// NewPodSamples returns an empty PodSamples with room for capacity pods before it grows.
func NewPodSamples(capacity int) *PodSamples {
	p := &PodSamples{seed: maphash.MakeSeed()}
	if capacity > 0 {
		p.recs = make([]podRecord, 0, capacity)
		p.slots = make([]int32, slotsFor(capacity))
	}
	return p
}

// PodSamplesOf returns the samples of m, added in the order of their names.
func PodSamplesOf(m map[string]PodSample) *PodSamples {
	p := NewPodSamples(len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		p.Add(name, m[name])
	}
	return p
}

// slotsFor is the index length for n records: a power of two, at least 2n.
func slotsFor(n int) int {
	s := minSlots
	for s < 2*n {
		s <<= 1
	}
	return s
}

// Add records s as pod's sample and reports true, or reports false and changes nothing when pod
// already has one.
func (p *PodSamples) Add(pod string, s PodSample) bool {
	if p.slots == nil {
		p.seed = maphash.MakeSeed()
		p.slots = make([]int32, minSlots)
	}
	if 2*(len(p.recs)+1) > len(p.slots) {
		p.grow()
	}
	i, found := p.find(pod)
	if found {
		return false
	}
	p.recs = append(p.recs, podRecord{pod: pod, sample: s})
	p.slots[i] = int32(len(p.recs))
	return true
}

// Get returns pod's sample, if it has one.
func (p *PodSamples) Get(pod string) (PodSample, bool) {
	if p == nil || len(p.recs) == 0 {
		return PodSample{}, false
	}
	i, found := p.find(pod)
	if !found {
		return PodSample{}, false
	}
	return p.recs[p.slots[i]-1].sample, true
}

// find returns the slot holding pod, or the empty slot where it would go.
func (p *PodSamples) find(pod string) (int, bool) {
	mask := uint64(len(p.slots) - 1)
	for i := maphash.String(p.seed, pod) & mask; ; i = (i + 1) & mask {
		s := p.slots[i]
		if s == 0 {
			return int(i), false
		}
		if p.recs[s-1].pod == pod {
			return int(i), true
		}
	}
}

// grow doubles the index and puts every record back.
func (p *PodSamples) grow() {
	p.slots = make([]int32, 2*len(p.slots))
	for k := range p.recs {
		i, _ := p.find(p.recs[k].pod)
		p.slots[i] = int32(k + 1)
	}
}

// Len is the number of pods with a sample.
func (p *PodSamples) Len() int {
	if p == nil {
		return 0
	}
	return len(p.recs)
}

// All yields every pod and its sample, in the order they were added.
func (p *PodSamples) All() iter.Seq2[string, PodSample] {
	return func(yield func(string, PodSample) bool) {
		if p == nil {
			return
		}
		for k := range p.recs {
			if !yield(p.recs[k].pod, p.recs[k].sample) {
				return
			}
		}
	}
}

// Values yields every sample, in the order they were added, without the pods' names.
func (p *PodSamples) Values() iter.Seq[PodSample] {
	return func(yield func(PodSample) bool) {
		if p == nil {
			return
		}
		for k := range p.recs {
			if !yield(p.recs[k].sample) {
				return
			}
		}
	}
}

// Map returns the samples as a map from pod name (nil for a nil PodSamples).
func (p *PodSamples) Map() map[string]PodSample {
	if p == nil {
		return nil
	}
	m := make(map[string]PodSample, len(p.recs))
	for name, s := range p.All() {
		m[name] = s
	}
	return m
}

// Clone returns a copy that shares no memory with p (nil for nil).
func (p *PodSamples) Clone() *PodSamples {
	if p == nil {
		return nil
	}
	return &PodSamples{recs: slices.Clone(p.recs), slots: slices.Clone(p.slots), seed: p.seed}
}

// Equal reports whether p and q hold the same samples for the same pods, whatever the order
// they were added in (a nil PodSamples equals an empty one).
func (p *PodSamples) Equal(q *PodSamples) bool {
	if p.Len() != q.Len() {
		return false
	}
	for name, s := range p.All() {
		if t, ok := q.Get(name); !ok || t != s {
			return false
		}
	}
	return true
}

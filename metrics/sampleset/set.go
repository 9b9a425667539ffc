package sampleset

import (
	"hash/maphash"
	"iter"
	"maps"
	"slices"
)

// Set is one metric's samples, at most one per pod name, in the order they were added,
// with an index by name. A nil *Set is empty for reading (Add on it panics, as a write to a
// nil map does). Reads may run concurrently; Add may not. Up to 2^31-1 pods.
//
// It is what the metrics layer hands the decision core, which looks every selected pod up in
// it once per sync. A map[string]Sample did that job before: Go sizes one for 940 pods at
// 2,048 slots of name and sample, two 41 KiB tables allocated and cleared on every sync. A Set
// holds the records once, in a slice, and indexes them with 4-byte positions (8 KiB at 1,000
// pods, without a pointer for the garbage collector to follow): about 45 KiB where the map took
// 96 (controller/replicas BenchmarkDecide).
type Set struct {
	recs []podRecord
	// slots is an open-addressing index with linear probing; its length is a power of two at
	// least twice len(recs). 0 is an empty slot, otherwise a position in recs plus one.
	slots []int32
	seed  maphash.Seed
}

type podRecord struct {
	pod    string
	sample Sample
}

// minSlots keeps a tiny container's index from growing at once.
const minSlots = 8

// New returns an empty Set with room for capacity pods before it grows.
func New(capacity int) *Set {
	p := &Set{seed: maphash.MakeSeed()}
	if capacity > 0 {
		p.recs = make([]podRecord, 0, capacity)
		p.slots = make([]int32, slotsFor(capacity))
	}
	return p
}

// Of returns the samples of m, added in the order of their names.
func Of(m map[string]Sample) *Set {
	p := New(len(m))
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
func (p *Set) Add(pod string, s Sample) bool {
	if p.slots == nil {
		p.seed = maphash.MakeSeed()
		p.slots = make([]int32, minSlots)
	}
	i, found := p.find(pod)
	if found {
		return false
	}
	if 2*(len(p.recs)+1) > len(p.slots) {
		p.grow()
		i, _ = p.find(pod)
	}
	p.recs = append(p.recs, podRecord{pod: pod, sample: s})
	p.slots[i] = int32(len(p.recs))
	return true
}

// Get returns pod's sample, if it has one.
func (p *Set) Get(pod string) (Sample, bool) {
	if p == nil || len(p.recs) == 0 {
		return Sample{}, false
	}
	i, found := p.find(pod)
	if !found {
		return Sample{}, false
	}
	return p.recs[p.slots[i]-1].sample, true
}

// GetNear is Get trying the record at position i first (the position in the order added),
// which skips the index when the caller reads the pods in the order their samples were added
// and passes the position after the last one found; at is the sample's position.
func (p *Set) GetNear(pod string, i int) (s Sample, at int, ok bool) {
	if p == nil || len(p.recs) == 0 {
		return Sample{}, 0, false
	}
	if i >= 0 && i < len(p.recs) && p.recs[i].pod == pod {
		return p.recs[i].sample, i, true
	}
	k, found := p.find(pod)
	if !found {
		return Sample{}, 0, false
	}
	at = int(p.slots[k] - 1)
	return p.recs[at].sample, at, true
}

// find returns the slot holding pod, or the empty slot where it would go.
func (p *Set) find(pod string) (int, bool) {
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
func (p *Set) grow() {
	p.slots = make([]int32, 2*len(p.slots))
	for k := range p.recs {
		i, _ := p.find(p.recs[k].pod)
		p.slots[i] = int32(k + 1)
	}
}

// Reset empties p and keeps its memory and seed, for a caller that fills a set per round
// and reads none of the last round's once the next begins (the simulator, at every sync).
func (p *Set) Reset() {
	p.recs = p.recs[:0]
	clear(p.slots)
}

// Len is the number of pods with a sample.
func (p *Set) Len() int {
	if p == nil {
		return 0
	}
	return len(p.recs)
}

// All yields every pod and its sample, in the order they were added.
func (p *Set) All() iter.Seq2[string, Sample] {
	return func(yield func(string, Sample) bool) {
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
func (p *Set) Values() iter.Seq[Sample] {
	return func(yield func(Sample) bool) {
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

// Map returns the samples as a map from pod name (nil for a nil Set).
func (p *Set) Map() map[string]Sample {
	if p == nil {
		return nil
	}
	m := make(map[string]Sample, len(p.recs))
	for name, s := range p.All() {
		m[name] = s
	}
	return m
}

// Clone returns a copy that shares no memory with p (nil for nil).
func (p *Set) Clone() *Set {
	if p == nil {
		return nil
	}
	return &Set{recs: slices.Clone(p.recs), slots: slices.Clone(p.slots), seed: p.seed}
}

// Equal reports whether p and q hold the same samples for the same pods, whatever the order
// they were added in (a nil Set equals an empty one).
func (p *Set) Equal(q *Set) bool {
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

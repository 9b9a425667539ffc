package sampleset

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"
)

func TestSetKeepsOneSamplePerPodInTheOrderAdded(t *testing.T) {
	tests := []struct {
		name      string
		capacity  int
		add       []string
		wantAdded []bool
		wantOrder []string
	}{
		{name: "nothing added", capacity: 4},
		{name: "pods in the order added", capacity: 4, add: []string{"web-b", "web-a", "web-c"}, wantAdded: []bool{true, true, true}, wantOrder: []string{"web-b", "web-a", "web-c"}},
		{name: "a repeated pod keeps its first sample", capacity: 4, add: []string{"web-a", "web-b", "web-a"}, wantAdded: []bool{true, true, false}, wantOrder: []string{"web-a", "web-b"}},
		{name: "the empty name is a name", capacity: 1, add: []string{"", "x", ""}, wantAdded: []bool{true, true, false}, wantOrder: []string{"", "x"}},
		{name: "no capacity grows as it goes", capacity: 0, add: []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"}, wantAdded: []bool{true, true, true, true, true, true, true, true, true}, wantOrder: []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := New(tc.capacity)
			// Each add carries its own value, so that a repeat's value would show if it replaced
			// the first.
			first := map[string]Sample{}
			for i, name := range tc.add {
				s := Sample{MilliValue: int64(i + 1), Timestamp: int64(10 * (i + 1)), Window: time.Duration(i+1) * time.Second}
				if got := p.Add(name, s); got != tc.wantAdded[i] {
					t.Errorf("Add(%q) = %v, want %v", name, got, tc.wantAdded[i])
				}
				if _, seen := first[name]; !seen {
					first[name] = s
				}
			}
			for name, want := range first {
				if got, ok := p.Get(name); !ok || got != want {
					t.Errorf("Get(%q) = %+v, %v, want the first sample added, %+v", name, got, ok, want)
				}
			}
			var order []string
			for name, s := range p.All() {
				order = append(order, name)
				if got, ok := p.Get(name); !ok || got != s {
					t.Errorf("Get(%q) = %+v, %v; All yielded %+v", name, got, ok, s)
				}
			}
			if !slices.Equal(order, tc.wantOrder) {
				t.Errorf("All yielded %q, want %q", order, tc.wantOrder)
			}
			if p.Len() != len(tc.wantOrder) {
				t.Errorf("Len = %d, want %d", p.Len(), len(tc.wantOrder))
			}
			if _, ok := p.Get("absent"); ok {
				t.Error("Get found a pod never added")
			}
		})
	}
}

func TestOfNilIsEmptyNotNil(t *testing.T) {
	p := Of(nil)
	if p == nil || p.Len() != 0 {
		t.Fatalf("Of(nil) = %v", p)
	}
	if !p.Add("a", Sample{MilliValue: 1}) {
		t.Error("cannot add to Of(nil)")
	}
}

func TestValuesYieldsTheSamplesInTheOrderAdded(t *testing.T) {
	p := New(0)
	for i, name := range []string{"c", "a", "b"} {
		p.Add(name, Sample{MilliValue: int64(i)})
	}
	var got []int64
	for s := range p.Values() {
		got = append(got, s.MilliValue)
	}
	if !slices.Equal(got, []int64{0, 1, 2}) {
		t.Errorf("Values yielded %v, want [0 1 2]", got)
	}
}

func TestNilSetIsEmpty(t *testing.T) {
	var p *Set
	if p.Len() != 0 {
		t.Errorf("Len = %d", p.Len())
	}
	if _, ok := p.Get("a"); ok {
		t.Error("Get found a pod")
	}
	for name := range p.All() {
		t.Errorf("All yielded %q", name)
	}
	for s := range p.Values() {
		t.Errorf("Values yielded %+v", s)
	}
	if p.Map() != nil || p.Clone() != nil {
		t.Error("Map or Clone of nil is not nil")
	}
	if !p.Equal(New(3)) || !New(0).Equal(p) {
		t.Error("nil does not equal an empty Set")
	}
}

func TestSetEqualCloneAndMap(t *testing.T) {
	m := map[string]Sample{"b": {MilliValue: 2}, "a": {MilliValue: 1}, "c": {MilliValue: 3}}
	p := Of(m)
	var names []string
	for name := range p.All() {
		names = append(names, name)
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("Of added %q, want the names in order", names)
	}
	if !maps.Equal(p.Map(), m) {
		t.Errorf("Map = %v, want %v", p.Map(), m)
	}
	reversed := New(0)
	for _, name := range []string{"c", "b", "a"} {
		reversed.Add(name, m[name])
	}
	if !p.Equal(reversed) {
		t.Error("the same samples added in another order are not Equal")
	}
	c := p.Clone()
	// Enough pods to grow the clone's index, which must not be the original's.
	for i := range 20 {
		c.Add(fmt.Sprintf("extra-%d", i), Sample{MilliValue: int64(100 + i)})
	}
	if p.Len() != 3 || p.Equal(c) {
		t.Error("adding to a clone changed the original's length, or Equal missed the extra pods")
	}
	for name, want := range m {
		for _, q := range []*Set{p, c} {
			if got, ok := q.Get(name); !ok || got != want {
				t.Errorf("after adding to the clone, Get(%q) = %+v, %v, want %+v", name, got, ok, want)
			}
		}
	}
	if _, ok := p.Get("extra-0"); ok {
		t.Error("the original finds a pod added to its clone")
	}
	other := Of(map[string]Sample{"a": {MilliValue: 1}, "b": {MilliValue: 2}, "c": {MilliValue: 4}})
	if p.Equal(other) {
		t.Error("Equal missed a different value")
	}
}

// FuzzSetActsLikeAMap checks the container against a map fed the same names: Add reports
// a repeat exactly when the map has the name, and every name, and only those, is found.
func FuzzSetActsLikeAMap(f *testing.F) {
	f.Add([]byte("web-1\x00web-2\x00web-1\x00\x00"), uint8(0))
	f.Add([]byte("a\x00b\x00c\x00d\x00e\x00f\x00g\x00h\x00i\x00j"), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, capacity uint8) {
		p := New(int(capacity))
		m := map[string]Sample{}
		var order []string
		for i, name := range splitNames(data) {
			s := Sample{MilliValue: int64(i), Timestamp: int64(len(name))}
			_, had := m[name]
			if added := p.Add(name, s); added == had {
				t.Fatalf("Add(%q) = %v with the name already added: %v", name, added, had)
			}
			if !had {
				m[name] = s
				order = append(order, name)
			}
		}
		if p.Len() != len(m) {
			t.Fatalf("Len = %d, want %d", p.Len(), len(m))
		}
		for name, want := range m {
			if got, ok := p.Get(name); !ok || got != want {
				t.Fatalf("Get(%q) = %+v, %v, want %+v", name, got, ok, want)
			}
			at := slices.Index(order, name)
			for _, i := range []int{at, at + 1, at - 1, 0, -1, len(order)} {
				if got, gotAt, ok := p.GetNear(name, i); !ok || got != want || gotAt != at {
					t.Fatalf("GetNear(%q, %d) = %+v at %d, %v, want %+v at %d", name, i, got, gotAt, ok, want, at)
				}
			}
			if _, ok := p.Get(name + "\x01"); ok && !mapHas(m, name+"\x01") {
				t.Fatalf("Get found %q, never added", name+"\x01")
			}
		}
		var got []string
		for name := range p.All() {
			got = append(got, name)
		}
		if !slices.Equal(got, order) {
			t.Fatalf("All yielded %q, want %q", got, order)
		}
	})
}

func mapHas(m map[string]Sample, k string) bool { _, ok := m[k]; return ok }

func splitNames(data []byte) []string {
	var out []string
	start := 0
	for i, c := range data {
		if c == 0 {
			out = append(out, string(data[start:i]))
			start = i + 1
		}
	}
	return append(out, string(data[start:]))
}

func BenchmarkSetAddAndGet(b *testing.B) {
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("web-5d8f9c7b4-%05d", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		p := New(len(names))
		for i, n := range names {
			p.Add(n, Sample{MilliValue: int64(i)})
		}
		for _, n := range names {
			if _, ok := p.Get(n); !ok {
				b.Fatal(n)
			}
		}
	}
}

func TestResetEmptiesTheSetWhichThenWorksAsNew(t *testing.T) {
	p := New(2)
	p.Add("a", Sample{MilliValue: 1})
	p.Add("b", Sample{MilliValue: 2})
	p.Reset()
	if _, ok := p.Get("a"); ok || p.Len() != 0 {
		t.Fatalf("after Reset: a found %v, %d samples; want none", ok, p.Len())
	}
	for i, name := range []string{"b", "c", "d", "e", "f"} {
		if !p.Add(name, Sample{MilliValue: int64(10 + i)}) {
			t.Fatalf("Add(%s) after Reset reports a sample already there", name)
		}
	}
	if s, ok := p.Get("b"); !ok || s.MilliValue != 10 || p.Len() != 5 {
		t.Errorf("b = %v, %v with %d samples; want 10 of 5 (the sample before Reset is gone)", s, ok, p.Len())
	}
}

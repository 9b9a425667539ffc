package samples

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"
)

func TestPodSamplesKeepsOneSamplePerPodInTheOrderAdded(t *testing.T) {
	a := PodSample{MilliValue: 1, Timestamp: 10, Window: time.Minute}
	b := PodSample{MilliValue: 2, Timestamp: 20, Window: 30 * time.Second}
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
			p := NewPodSamples(tc.capacity)
			for i, name := range tc.add {
				s := a
				if i%2 == 1 {
					s = b
				}
				if got := p.Add(name, s); got != tc.wantAdded[i] {
					t.Errorf("Add(%q) = %v, want %v", name, got, tc.wantAdded[i])
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

func TestNilPodSamplesIsEmpty(t *testing.T) {
	var p *PodSamples
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
	if !p.Equal(NewPodSamples(3)) || !NewPodSamples(0).Equal(p) {
		t.Error("nil does not equal an empty PodSamples")
	}
}

func TestPodSamplesEqualCloneAndMap(t *testing.T) {
	m := map[string]PodSample{"b": {MilliValue: 2}, "a": {MilliValue: 1}, "c": {MilliValue: 3}}
	p := PodSamplesOf(m)
	var names []string
	for name := range p.All() {
		names = append(names, name)
	}
	if !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("PodSamplesOf added %q, want the names in order", names)
	}
	if !maps.Equal(p.Map(), m) {
		t.Errorf("Map = %v, want %v", p.Map(), m)
	}
	reversed := NewPodSamples(0)
	for _, name := range []string{"c", "b", "a"} {
		reversed.Add(name, m[name])
	}
	if !p.Equal(reversed) {
		t.Error("the same samples added in another order are not Equal")
	}
	c := p.Clone()
	c.Add("d", PodSample{MilliValue: 4})
	if p.Len() != 3 || p.Equal(c) {
		t.Error("adding to a clone changed the original, or Equal missed the extra pod")
	}
	other := PodSamplesOf(map[string]PodSample{"a": {MilliValue: 1}, "b": {MilliValue: 2}, "c": {MilliValue: 4}})
	if p.Equal(other) {
		t.Error("Equal missed a different value")
	}
}

// FuzzPodSamplesActsLikeAMap checks the container against a map fed the same names: Add reports
// a repeat exactly when the map has the name, and every name, and only those, is found.
func FuzzPodSamplesActsLikeAMap(f *testing.F) {
	f.Add([]byte("web-1\x00web-2\x00web-1\x00\x00"), uint8(0))
	f.Add([]byte("a\x00b\x00c\x00d\x00e\x00f\x00g\x00h\x00i\x00j"), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, capacity uint8) {
		p := NewPodSamples(int(capacity))
		m := map[string]PodSample{}
		var order []string
		for i, name := range splitNames(data) {
			s := PodSample{MilliValue: int64(i), Timestamp: int64(len(name))}
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

func mapHas(m map[string]PodSample, k string) bool { _, ok := m[k]; return ok }

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

func BenchmarkPodSamplesAddAndGet(b *testing.B) {
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("web-5d8f9c7b4-%05d", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		p := NewPodSamples(len(names))
		for i, n := range names {
			p.Add(n, PodSample{MilliValue: int64(i)})
		}
		for _, n := range names {
			if _, ok := p.Get(n); !ok {
				b.Fatal(n)
			}
		}
	}
}

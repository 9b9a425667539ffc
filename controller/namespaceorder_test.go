package controller

import (
	"errors"
	"slices"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/client-go/tools/cache"
)

func TestNamespaceOrder(t *testing.T) {
	tests := []struct {
		name string
		// ops are keys pushed, and "pop" for a key handed out.
		ops  []string
		want []string
	}{
		{name: "keys pushed in a map's order are handed out by namespace, namespaces in the order they came",
			ops:  []string{"a/1", "b/1", "a/2", "c/1", "b/2", "a/3", "pop", "pop", "pop", "pop", "pop", "pop"},
			want: []string{"a/1", "a/2", "a/3", "b/1", "b/2", "c/1"}},
		{name: "a key of the namespace being handed out waits for the groups already due",
			ops:  []string{"a/1", "a/2", "b/1", "pop", "a/3", "pop", "pop", "pop"},
			want: []string{"a/1", "a/2", "b/1", "a/3"}},
		{name: "a key joins its namespace's group that has not started",
			ops:  []string{"a/1", "b/1", "pop", "c/1", "b/2", "pop", "pop", "pop"},
			want: []string{"a/1", "b/1", "b/2", "c/1"}},
		{name: "a key without a namespace is a group of its own",
			ops:  []string{"x", "a/1", "y", "pop", "pop", "pop"},
			want: []string{"x", "y", "a/1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := newNamespaceOrder()
			var got []string
			pushed := 0
			for _, op := range tc.ops {
				if op == "pop" {
					got = append(got, o.Pop())
				} else {
					o.Push(op)
					pushed++
				}
				if want := pushed - len(got); o.Len() != want {
					t.Fatalf("after %q: Len %d, want %d", op, o.Len(), want)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("handed out %q, want %q", got, tc.want)
			}
		})
	}
}

// TestTheQueueHandsOutANamespacesHPAsTogether adds HPAs to run's work queue in the order a
// map gives them (as the informer's first list does) and takes them as the workers do: with
// per-namespace reads a namespace's HPAs come together, so that their syncs share one list;
// with per-HPA reads the queue is upstream's, first in, first out.
func TestTheQueueHandsOutANamespacesHPAsTogether(t *testing.T) {
	added := []string{"a/one", "b/one", "a/two", "c/one", "b/two", "a/three"}
	tests := []struct {
		reads MetricsReads
		want  []string
	}{
		{reads: MetricsReadsPerNamespace, want: []string{"a/one", "a/two", "a/three", "b/one", "b/two", "c/one"}},
		{reads: MetricsReadsPerHPA, want: added},
	}
	for _, tc := range tests {
		t.Run(strings.ToLower(string(tc.reads)), func(t *testing.T) {
			var hpas []*autoscalingv2.HorizontalPodAutoscaler
			for _, key := range added {
				namespace, name, _ := cache.SplitMetaNamespaceKey(key)
				h := newHPA(name)
				h.Namespace = namespace
				hpas = append(hpas, h)
			}
			opts := DefaultOptions()
			opts.MetricsReads = tc.reads
			f := newFixture(t, opts, hpas, nil, nil, failingMetrics(errors.New("not read")))
			defer f.c.queue.ShutDown()
			var got []string
			for f.c.queue.Len() > 0 {
				key, _ := f.c.queue.Get()
				got = append(got, key)
				f.c.queue.Done(key)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("handed out %q, want %q", got, tc.want)
			}
		})
	}
}

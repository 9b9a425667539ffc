package decode

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// The seed corpora live in testdata/fuzz/<target>; `make test-fuzz-metrics` runs each
// target for a bounded time.

// FuzzHeapsterPodMetrics feeds arbitrary bodies to the metrics/v1alpha1 decoder and the
// per-pod conversion: they must never panic, and an accepted answer must only hold sane,
// fresh values of pods it listed.
func FuzzHeapsterPodMetrics(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte, container string, maxAgeSeconds int64) {
		items, err := HeapsterPodMetrics(body)
		if err != nil || len(items) == 0 {
			return
		}
		now := fixedTimestamp
		maxAge := time.Duration(maxAgeSeconds) * time.Second
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			got, _, err := PodResourceSamples(items, res, container, now, maxAge)
			if err != nil {
				continue
			}
			names := map[string]bool{}
			for _, it := range items {
				names[it.Name] = true
			}
			for pod, s := range got.All() {
				if !names[pod] {
					t.Fatalf("sample for pod %q that was not listed", pod)
				}
				checkSample(t, pod, s, now, maxAge)
			}
		}
	})
}

// FuzzHeapsterModel feeds arbitrary bodies to the model API decoder and the collapse.
func FuzzHeapsterModel(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte, pods uint8, maxAgeSeconds int64) {
		list, err := HeapsterModel(body)
		if err != nil {
			return
		}
		names := make([]string, int(pods)%8)
		for i := range names {
			names[i] = fmt.Sprintf("pod-%d", i)
		}
		now := fixedTimestamp
		maxAge := time.Duration(maxAgeSeconds) * time.Second
		got, ts, err := HeapsterPodsSamples(names, list, now, maxAge)
		if err != nil {
			return
		}
		if len(list.Items) != len(names) {
			t.Fatalf("accepted %d items for %d pods", len(list.Items), len(names))
		}
		for pod, s := range got.All() {
			checkSample(t, pod, s, now, maxAge)
			if sampleset.Time(s.Timestamp).Before(ts) {
				t.Fatalf("pod %s newest sample %s is older than the returned time %s", pod, sampleset.Time(s.Timestamp), ts)
			}
		}
	})
}

func checkSample(t *testing.T, pod string, s sampleset.Sample, now time.Time, maxAge time.Duration) {
	t.Helper()
	if s.MilliValue < 0 || s.MilliValue > MaxMilliValue {
		t.Fatalf("pod %s: value %d outside [0, %d]", pod, s.MilliValue, MaxMilliValue)
	}
	if maxAge > 0 && now.Sub(sampleset.Time(s.Timestamp)) > maxAge {
		t.Fatalf("pod %s: stale sample %s accepted", pod, sampleset.Time(s.Timestamp))
	}
	if s.Window < 0 {
		t.Fatalf("pod %s: negative window %s", pod, s.Window)
	}
}

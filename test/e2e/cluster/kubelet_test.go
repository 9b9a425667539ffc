package cluster

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestResourceMetricsPageMatchesGolden(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pods := []PodSample{
		{Namespace: "ns", Name: "web-1", Containers: []string{"app", "sidecar"}, StartTime: now.Add(-100 * time.Second), CPUSeconds: 12.5, CPUMilli: 250, MemoryBytes: 64 << 20},
		{Namespace: "ns", Name: "web-2", Containers: []string{"app"}, StartTime: now.Add(-10 * time.Second), CPUSeconds: 0.25, CPUMilli: 25, MemoryBytes: 32 << 20},
	}
	got := renderResourceMetrics(pods, 101.5, 600<<20, now)
	golden := filepath.Join("testdata", "metrics-resource.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("/metrics/resource (-want +got):\n%s", diff)
	}
}

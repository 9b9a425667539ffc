package output

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-hpa/kubectl-hpa/internal/golden"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
)

// simulationFixture is a hand-made Simulation: a load that rises from 2 to 10 pods' worth and
// falls back over 20 minutes, the HPA as it is against a faster variant.
func simulationFixture() *v1alpha1.Simulation {
	s := v1alpha1.NewSimulation()
	s.Metadata = v1alpha1.Metadata{Name: "web", Namespace: "shop"}
	s.Source = "cluster"
	s.Load = v1alpha1.SimLoad{File: "load.csv", Metrics: []string{"cpu"}, Interpolation: "step", Points: 3}
	s.DurationSeconds = 1200
	s.Model = []v1alpha1.SimParam{
		{Name: "sync period", Value: "15s", Source: "upstream default"},
		{Name: "pod started to Ready", Value: "5s", Source: "assumed"},
	}
	s.Workload = v1alpha1.SimWorkload{Kind: "Deployment", Name: "web", Replicas: 2, Requests: map[string]string{"cpu": "200m", "memory": "256Mi"}}
	mk := func(name string, changes []string, rate int32, downDelay float64) v1alpha1.SimVariant {
		v := v1alpha1.SimVariant{Name: name, Changes: changes, MinReplicas: 2, MaxReplicas: 10, Targets: []v1alpha1.SimTarget{{Metric: "cpu", Target: "50%"}}}
		replicas := int32(2)
		for i := 0; i <= 80; i++ {
			at := float64(i * 15)
			demand := 2.0 // pods' worth at target
			if at >= 120 && at < 600 {
				demand = 10
			}
			want := int32(math.Ceil(demand))
			st := v1alpha1.SimStep{AtSeconds: at, Ready: replicas, Desired: want}
			switch {
			case want > replicas:
				st.Constraint = v1alpha1.ConstraintScaleUpLimit
				replicas = min(replicas+rate, want)
				st.Scaled = true
				v.Summary.ScaleUps++
			case want < replicas && at-600 < downDelay:
				st.Constraint = v1alpha1.ConstraintScaleDownStabilization
			case want < replicas:
				replicas = want
				st.Scaled = true
				v.Summary.ScaleDowns++
			}
			st.Replicas = replicas
			st.Desired = replicas
			st.Utilization = map[string]float64{"cpu": math.Round(demand / float64(st.Ready) * 100)}
			if replicas > v.Summary.PeakReplicas {
				v.Summary.PeakReplicas, v.Summary.PeakAtSeconds = replicas, at
			}
			v.Summary.PodSeconds += float64(replicas) * 15
			if st.Utilization["cpu"] > 100 {
				v.Summary.SecondsAboveTarget += 15
			}
			if st.Constraint != "" {
				if v.Summary.HeldBackBy == nil {
					v.Summary.HeldBackBy = map[string]int{}
				}
				v.Summary.HeldBackBy[st.Constraint]++
			}
			v.Steps = append(v.Steps, st)
		}
		return v
	}
	s.Variants = []v1alpha1.SimVariant{
		mk("current", nil, 4, 300),
		mk("fast", []string{"scaleUp.policies=Pods:8/15s", "scaleDown.stabilizationWindowSeconds=60"}, 8, 60),
	}
	return s
}

func TestSimulationRendersMatchGolden(t *testing.T) {
	s := simulationFixture()
	for _, f := range []struct {
		ext   string
		print func(*bytes.Buffer) error
	}{
		{"json", func(b *bytes.Buffer) error { return (&printers.JSONPrinter{}).PrintObj(s, b) }},
		{"yaml", func(b *bytes.Buffer) error { return (&YAMLPrinter{}).PrintObj(s, b) }},
	} {
		t.Run(f.ext, func(t *testing.T) {
			var b bytes.Buffer
			if err := f.print(&b); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "simulation."+f.ext+".golden"), b.Bytes())
		})
	}
}

func TestSimulationChartFitsItsWidth(t *testing.T) {
	s := simulationFixture()
	for _, width := range []int{10, 40, 80, 133} {
		var b bytes.Buffer
		Chart(&b, s.Variants[0], s.DurationSeconds, ChartOptions{Width: width, Height: 4})
		chart := b.String()
		if !strings.Contains(chart, "│") {
			t.Fatalf("no chart of the variant %s:\n%s", s.Variants[0].Name, chart)
		}
		want := max(width, MinChartWidth)
		for _, line := range strings.Split(strings.TrimRight(chart, "\n"), "\n") {
			if !strings.ContainsAny(line, "│└") {
				continue // a title or the time labels
			}
			if n := len([]rune(line)); n > want {
				t.Errorf("width %d: a chart line is %d columns: %q", width, n, line)
			}
		}
	}
}

func TestChartCellsUseEighths(t *testing.T) {
	tests := []struct {
		v      float64
		row    int
		onLine bool
		want   rune
	}{
		{0, 0, false, ' '},
		{math.NaN(), 0, true, '─'},
		{0.01, 0, false, '▁'}, // anything above zero shows
		{50, 0, false, '█'},   // 50 of 100 over 2 rows fills row 0
		{50, 1, false, ' '},
		{75, 1, false, '▄'},
		{100, 1, true, '█'},
	}
	for _, tt := range tests {
		if got := cell(tt.v, 100, 2, tt.row, tt.onLine); got != tt.want {
			t.Errorf("cell(%v, row %d, line %v) = %q, want %q", tt.v, tt.row, tt.onLine, got, tt.want)
		}
	}
}

package plot

import (
	"bytes"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/kubectl-hpa/kubectl-hpa/internal/golden"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
)

func fixture() *v1alpha1.Simulation {
	s := v1alpha1.NewSimulation()
	s.Metadata = v1alpha1.Metadata{Name: "web", Namespace: "shop"}
	s.Load = v1alpha1.SimLoad{File: "load.csv"}
	s.DurationSeconds = 600
	for i, name := range []string{"current", "fast"} {
		v := v1alpha1.SimVariant{Name: name, MinReplicas: 1, MaxReplicas: 10}
		// As the simulator steps: one sync every 15s, the last one before the end.
		for t := 0; t < 600; t += 15 {
			r := int32(2)
			if t >= 120 {
				r = min(10, 2+int32((t-120)/15)*int32(2+2*i))
			}
			v.Steps = append(v.Steps, v1alpha1.SimStep{AtSeconds: float64(t), Replicas: r, Utilization: map[string]float64{"cpu": 800 / float64(r) * 10}})
		}
		s.Variants = append(s.Variants, v)
	}
	return s
}

// The SVG is the same bytes on every run and platform (no embedded fonts, no time stamps).
func TestSVGMatchesGolden(t *testing.T) {
	var b bytes.Buffer
	if err := Render(&b, ".svg", fixture()); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "simulation.svg.golden"), b.Bytes())
}

func TestWritePNGIsAWholeImage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chart.png")
	if err := Write(path, fixture()); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 500 || b.Dy() < 500 {
		t.Errorf("image %v: too small for two panels", b)
	}
}

func TestWriteLeavesNoPartialFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "chart.svg")
	if err := os.WriteFile(path, []byte("previous"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(filepath.Join(dir, "chart.pdf"), fixture()); err == nil || !strings.Contains(err.Error(), ".svg or .png") {
		t.Errorf("a .pdf: error %v, want one naming the formats", err)
	}
	if err := Write(path, fixture()); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want chart.svg alone (no temporary file left)", names)
	}
	got, _ := os.ReadFile(path)
	if !bytes.HasPrefix(got, []byte("<?xml")) {
		t.Errorf("chart.svg starts %q, want the new SVG", got[:min(20, len(got))])
	}
	if err := Write(filepath.Join(dir, "missing-dir", "chart.svg"), fixture()); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

// Every panel shows the same minutes at the same places: the whole simulated duration, with the
// same ticks, although the replicas end at the last sync and the target line at the end.
func TestPanelsShareOneTimeAxis(t *testing.T) {
	s := fixture()
	panels, err := buildPanels(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(panels) != 2 {
		t.Fatalf("%d panels, want replicas and cpu", len(panels))
	}
	tickLabels := func(p *gplot.Plot) []string {
		var l []string
		for _, tk := range p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max) {
			l = append(l, fmt.Sprintf("%g:%s", tk.Value, tk.Label))
		}
		return l
	}
	first := panels[0].plot
	for _, pn := range panels {
		p := pn.plot
		if p.X.Min != 0 || p.X.Max != s.DurationSeconds/60 {
			t.Errorf("panel %q spans minutes %g to %g, want 0 to %g", p.Title.Text, p.X.Min, p.X.Max, s.DurationSeconds/60)
		}
		if diff := cmp.Diff(tickLabels(first), tickLabels(p)); diff != "" {
			t.Errorf("panel %q has other time ticks than %q (-first +this):\n%s", p.Title.Text, first.Title.Text, diff)
		}
	}
}

// A legend inside a chart covers some simulation's line whatever the corner (the replicas
// climb to the top right, the utilization starts at the top left): each stands right of its
// chart's data, level with its top, and the charts' data areas line up.
func TestLegendsStandBesideTheDataTheyName(t *testing.T) {
	panels, err := buildPanels(fixture())
	if err != nil {
		t.Fatal(err)
	}
	c := draw.New(vgimg.New(24*vg.Centimeter, 16*vg.Centimeter))
	areas := layout(c, panels)
	if len(areas) != len(panels) {
		t.Fatalf("%d areas for %d panels", len(areas), len(panels))
	}
	firstData := areas[0].panel.plot.DataCanvas(areas[0].plot)
	for _, a := range areas {
		p := a.panel.plot
		data := p.DataCanvas(a.plot)
		legend := a.panel.legend.Rectangle(a.legend)
		if legend.Size().X == 0 || legend.Size().Y == 0 {
			t.Fatalf("panel %q: empty legend %v", p.Title.Text, legend)
		}
		if legend.Min.X <= a.plot.Max.X {
			t.Errorf("panel %q: legend %v starts left of the chart's right edge %v", p.Title.Text, legend, a.plot.Max.X)
		}
		if legend.Max.X > c.Max.X || legend.Max.Y != data.Max.Y || legend.Min.Y < a.plot.Min.Y {
			t.Errorf("panel %q: legend %v is not right of the data %v, level with its top, inside the canvas %v", p.Title.Text, legend, data.Rectangle, c.Rectangle)
		}
		if math.Abs(float64(data.Min.X-firstData.Min.X)) > 0.01 || math.Abs(float64(data.Max.X-firstData.Max.X)) > 0.01 {
			t.Errorf("panel %q: data spans x %v..%v, the first panel's %v..%v", p.Title.Text, data.Min.X, data.Max.X, firstData.Min.X, firstData.Max.X)
		}
	}
}

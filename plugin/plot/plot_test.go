package plot

import (
	"bytes"
	"flag"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

var update = flag.Bool("update", false, "rewrite golden files")

func fixture() *output.Simulation {
	s := output.NewSimulation()
	s.Metadata = output.Metadata{Name: "web", Namespace: "shop"}
	s.Load = output.SimLoad{File: "load.csv"}
	s.DurationSeconds = 600
	for i, name := range []string{"current", "fast"} {
		v := output.SimVariant{Name: name, MinReplicas: 1, MaxReplicas: 10}
		for t := 0; t <= 600; t += 15 {
			r := int32(2)
			if t >= 120 {
				r = min(10, 2+int32((t-120)/15)*int32(2+2*i))
			}
			v.Steps = append(v.Steps, output.SimStep{AtSeconds: float64(t), Replicas: r, Utilization: map[string]float64{"cpu": 800 / float64(r) * 10}})
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
	path := filepath.Join("testdata", "simulation.svg.golden")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
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

// Package plot draws a Simulation as an image file, SVG or PNG, with gonum.org/v1/plot: one
// panel of replicas over time with a line per variant, and one panel per metric of its value
// in percent of the target, the target drawn at 100%. The panels share one time axis, and
// each legend stands right of its panel, where it covers no line.
package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
)

// Formats are the file extensions Write accepts.
var Formats = []string{".svg", ".png"}

// CheckPath refuses a path whose extension is not a format Write draws, before anything runs.
func CheckPath(path string) error {
	if !slices.Contains(Formats, strings.ToLower(filepath.Ext(path))) {
		return fmt.Errorf("%s: the chart is drawn as SVG or PNG: name the file .svg or .png", path)
	}
	return nil
}

// Write draws s into path (the format from its extension). The image is rendered in memory and
// written to a temporary file in the same directory, which is then renamed over path: path
// never holds a partial chart.
func Write(path string, s *v1alpha1.Simulation) error {
	if err := CheckPath(path); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := Render(&b, strings.ToLower(filepath.Ext(path)), s); err != nil {
		return fmt.Errorf("drawing %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing is left to remove
	if _, err := tmp.Write(b.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// palette gives each variant its colour, in order (the HPA as it is first, in black).
var palette = []color.Color{
	color.RGBA{0, 0, 0, 255},
	color.RGBA{213, 94, 0, 255},
	color.RGBA{0, 114, 178, 255},
	color.RGBA{0, 158, 115, 255},
	color.RGBA{204, 121, 167, 255},
	color.RGBA{230, 159, 0, 255},
	color.RGBA{86, 180, 233, 255},
}

// panel is one chart and its legend, which Render draws beside the chart: inside, at any
// corner, it would cover a line of some simulation.
type panel struct {
	plot   *gplot.Plot
	legend gplot.Legend
}

// Render draws s in format ".svg" or ".png" to w.
func Render(w io.Writer, format string, s *v1alpha1.Simulation) error {
	panels, err := buildPanels(s)
	if err != nil {
		return err
	}
	const width = 24 * vg.Centimeter
	height := vg.Length(len(panels)) * 8 * vg.Centimeter
	var canvas vg.CanvasWriterTo
	switch format {
	case ".svg":
		canvas = vgsvg.NewWith(vgsvg.UseWH(width, height))
	case ".png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))}
	default:
		return fmt.Errorf("unknown format %q", format)
	}
	for _, a := range layout(draw.New(canvas), panels) {
		a.panel.plot.Draw(a.plot)
		a.panel.legend.Draw(a.legend)
	}
	_, err = canvas.WriteTo(w)
	return err
}

// area is where one panel is drawn: its chart, and its legend right of the chart's data.
type area struct {
	panel        panel
	plot, legend draw.Canvas
}

// layout stacks the panels in c, each chart as wide as the others with their data areas
// aligned (gplot.Align), and leaves right of them a column as wide as the widest legend; each
// legend starts there level with the top of its chart's data.
func layout(c draw.Canvas, panels []panel) []area {
	gap := 2 * vg.Millimeter
	var legendWidth vg.Length
	for _, p := range panels {
		legendWidth = max(legendWidth, p.legend.Rectangle(c).Size().X)
	}
	charts := draw.Crop(c, 0, -(legendWidth + 2*gap), 0, 0)
	rows := make([][]*gplot.Plot, len(panels))
	for i, p := range panels {
		rows[i] = []*gplot.Plot{p.plot}
	}
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter, PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 2 * vg.Millimeter}
	cells := gplot.Align(rows, tiles, charts)
	areas := make([]area, len(panels))
	for i, p := range panels {
		data := p.plot.DataCanvas(cells[i][0])
		legend := data
		legend.Min.X = cells[i][0].Max.X + gap
		legend.Max.X = legend.Min.X + legendWidth
		areas[i] = area{panel: p, plot: cells[i][0], legend: legend}
	}
	return areas
}

func buildPanels(s *v1alpha1.Simulation) ([]panel, error) {
	title := fmt.Sprintf("%s/%s under %s", s.Metadata.Namespace, s.Metadata.Name, s.Load.File)
	end := s.DurationSeconds / 60
	rp := newPanel(title+": replicas", "replicas")
	metrics := map[string]bool{}
	for i, v := range s.Variants {
		pts := make(plotter.XYs, 0, len(v.Steps))
		for _, st := range v.Steps {
			pts = append(pts, plotter.XY{X: st.AtSeconds / 60, Y: float64(st.Replicas)})
			end = max(end, st.AtSeconds/60)
			for m := range st.Utilization {
				metrics[m] = true
			}
		}
		if err := rp.addLine(v.Name, i, stairs(pts, s.DurationSeconds/60)); err != nil {
			return nil, err
		}
	}
	panels := []panel{rp}
	names := make([]string, 0, len(metrics))
	for m := range metrics {
		names = append(names, m)
	}
	slices.Sort(names)
	for _, m := range names {
		mp := newPanel(fmt.Sprintf("%s: %s in %% of its target", title, m), "% of target")
		target, err := plotter.NewLine(plotter.XYs{{X: 0, Y: 100}, {X: s.DurationSeconds / 60, Y: 100}})
		if err != nil {
			return nil, err
		}
		target.Color = color.Gray{Y: 150}
		target.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		mp.plot.Add(target)
		mp.legend.Add("target", target)
		for i, v := range s.Variants {
			pts := make(plotter.XYs, 0, len(v.Steps))
			for _, st := range v.Steps {
				if u, ok := st.Utilization[m]; ok {
					pts = append(pts, plotter.XY{X: st.AtSeconds / 60, Y: u})
				}
			}
			if len(pts) == 0 {
				continue
			}
			if err := mp.addLine(v.Name, i, pts); err != nil {
				return nil, err
			}
		}
		panels = append(panels, mp)
	}
	// One time axis: the same minutes, the same ticks, in every panel (each would otherwise
	// span its own data: the replicas end at the last sync, the target at the end).
	for _, p := range panels {
		p.plot.X.Min, p.plot.X.Max = 0, end
		p.plot.X.Tick.Marker = gplot.DefaultTicks{}
		p.plot.Y.Min = 0
	}
	return panels, nil
}

func newPanel(title, yLabel string) panel {
	p := gplot.New()
	p.Title.Text = title
	p.X.Label.Text = "minutes"
	p.Y.Label.Text = yLabel
	p.Add(plotter.NewGrid())
	legend := gplot.NewLegend()
	legend.Top, legend.Left = true, true
	return panel{plot: p, legend: legend}
}

func (p *panel) addLine(name string, i int, pts plotter.XYs) error {
	if len(pts) == 0 {
		return nil
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return fmt.Errorf("variant %s: %w", name, err)
	}
	l.Color = palette[i%len(palette)]
	l.Width = vg.Points(1.5)
	p.plot.Add(l)
	p.legend.Add(name, l)
	return nil
}

// stairs draws a count that holds between syncs as steps, not slopes, the last one held to
// end (in minutes) when the simulation runs on past its last sync.
func stairs(pts plotter.XYs, end float64) plotter.XYs {
	out := make(plotter.XYs, 0, 2*len(pts)+1)
	for i, pt := range pts {
		if i > 0 {
			out = append(out, plotter.XY{X: pt.X, Y: pts[i-1].Y})
		}
		out = append(out, pt)
	}
	if n := len(pts); n > 0 && pts[n-1].X < end {
		out = append(out, plotter.XY{X: end, Y: pts[n-1].Y})
	}
	return out
}

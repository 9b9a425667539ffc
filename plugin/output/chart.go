package output

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
)

// ChartOptions size a chart of a simulation variant (simulate, tune and timeline draw one).
type ChartOptions struct {
	// Width is the chart's width in columns, axis labels included (the terminal's width, or
	// a flag); below MinChartWidth the chart is drawn MinChartWidth wide.
	Width int
	// Height is the number of rows of each chart panel.
	Height int
}

// MinChartWidth and DefaultChartHeight bound the chart's size.
const (
	MinChartWidth      = 40
	DefaultChartWidth  = 80
	DefaultChartHeight = 6
)

// sized fills in the defaults and the least width.
func (o ChartOptions) sized() ChartOptions {
	if o.Width == 0 {
		o.Width = DefaultChartWidth
	}
	o.Width = max(o.Width, MinChartWidth)
	if o.Height <= 0 {
		o.Height = DefaultChartHeight
	}
	return o
}

// SimSeconds prints a virtual duration the way Go does, whole seconds only.
func SimSeconds(s float64) string {
	return (time.Duration(math.Round(s)) * time.Second).String()
}

// chartTopPercent is the highest utilization (in percent of target) a chart's scale reaches.
const chartTopPercent = 300

// eighths are the block glyphs, from one eighth of a cell to a full one.
var eighths = []rune("▁▂▃▄▅▆▇█")

// Chart draws one variant's replicas and each metric (in percent of its target)
// over time: one column per slice of time (the highest value in the slice), rows of block
// glyphs eight levels each, the y axis labelled at the top and bottom, the x axis at the
// start, middle and end.
func Chart(b *bytes.Buffer, v v1alpha1.SimVariant, duration float64, o ChartOptions) {
	o = o.sized()
	const axis = 7 // "  1234 " label width, then the plot
	cols := o.Width - axis - 1
	replicas := make([]float64, len(v.Steps))
	for i, st := range v.Steps {
		replicas[i] = float64(st.Replicas)
	}
	top := float64(v.MaxReplicas)
	for _, r := range replicas {
		top = max(top, r)
	}
	fmt.Fprintf(b, "%s: replicas (min %d, max %d, peak %d at %s)\n", v.Name, v.MinReplicas, v.MaxReplicas, v.Summary.PeakReplicas, SimSeconds(v.Summary.PeakAtSeconds))
	panel(b, bucket(v.Steps, replicas, duration, cols), top, o.Height, axis, "%.0f", -1)
	xAxis(b, duration, cols, axis)

	metrics := map[string]bool{}
	for _, st := range v.Steps {
		for m := range st.Utilization {
			metrics[m] = true
		}
	}
	for _, m := range slices.Sorted(maps.Keys(metrics)) {
		vals := make([]float64, len(v.Steps))
		hi := 100.0
		for i, st := range v.Steps {
			u, ok := st.Utilization[m]
			if !ok {
				u = math.NaN()
			} else {
				hi = max(hi, u)
			}
			vals[i] = u
		}
		// A round top, so the 100% line falls on a readable row; a spike past chartTopPercent
		// is drawn full height rather than flattening everything else.
		hi = min(math.Ceil(hi/50)*50, chartTopPercent)
		fmt.Fprintf(b, "%s: %s in %% of its target (─ at 100%%, columns past %.0f%% drawn full)\n", v.Name, m, hi)
		panel(b, bucket(v.Steps, vals, duration, cols), hi, o.Height, axis, "%.0f%%", 100)
		xAxis(b, duration, cols, axis)
	}
}

// bucket reduces the steps to one value per column: the highest in the column's slice of
// time, the last value carried into a column no step falls in, NaN before the first.
func bucket(steps []v1alpha1.SimStep, vals []float64, duration float64, cols int) []float64 {
	out := make([]float64, cols)
	for i := range out {
		out[i] = math.NaN()
	}
	if duration <= 0 || len(steps) == 0 {
		return out
	}
	for i, st := range steps {
		c := min(int(st.AtSeconds/duration*float64(cols)), cols-1)
		if math.IsNaN(out[c]) || vals[i] > out[c] {
			out[c] = vals[i]
		}
	}
	last := math.NaN()
	for i := range out {
		if math.IsNaN(out[i]) {
			out[i] = last
		}
		last = out[i]
	}
	return out
}

// panel draws vals (0..top) as height rows of block glyphs; line, when in range, is a value
// drawn as a rule where no bar reaches it.
func panel(b *bytes.Buffer, vals []float64, top float64, height, axis int, label string, line float64) {
	if top <= 0 {
		top = 1
	}
	lineRow := -1
	if line > 0 && line <= top {
		lineRow = min(int(line/top*float64(height)), height-1)
	}
	for row := height - 1; row >= 0; row-- {
		lab := ""
		switch row {
		case height - 1:
			lab = fmt.Sprintf(label, top)
		case 0:
			lab = fmt.Sprintf(label, 0.0)
		case lineRow:
			lab = fmt.Sprintf(label, line)
		}
		fmt.Fprintf(b, "%*s │", axis-1, lab)
		var rowText strings.Builder
		for _, v := range vals {
			rowText.WriteRune(cell(v, top, height, row, row == lineRow))
		}
		b.WriteString(strings.TrimRight(rowText.String(), " "))
		b.WriteString("\n")
	}
}

// cell is the glyph of one column in one row: full, an eighth-step partial top, the rule of a
// reference line, or blank.
func cell(v, top float64, height, row int, onLine bool) rune {
	blank := ' '
	if onLine {
		blank = '─'
	}
	if math.IsNaN(v) || v <= 0 {
		return blank
	}
	units := int(math.Round(v / top * float64(height*8)))
	units = max(units, 1) // a value above zero shows
	filled := units - row*8
	switch {
	case filled >= 8:
		return eighths[7]
	case filled <= 0:
		return blank
	default:
		return eighths[filled-1]
	}
}

// xAxis draws the time axis under a panel: a rule, then the start, middle and end times.
func xAxis(b *bytes.Buffer, duration float64, cols, axis int) {
	fmt.Fprintf(b, "%*s └%s\n", axis-1, "", strings.Repeat("─", cols))
	start, mid, end := "0s", SimSeconds(duration/2), SimSeconds(duration)
	line := []rune(strings.Repeat(" ", cols+axis+1))
	put := func(at int, s string) {
		at = max(0, min(at, len(line)-len(s)))
		copy(line[at:], []rune(s))
	}
	put(axis+1, start)
	put(axis+1+cols/2-len(mid)/2, mid)
	put(axis+1+cols-len(end), end)
	b.WriteString(strings.TrimRight(string(line), " "))
	b.WriteString("\n")
}

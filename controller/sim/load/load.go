// Package load is a demand curve over time: how much work a workload is asked to do, in total,
// per metric, as a load file (CSV or YAML) describes it. The simulator spreads it over pods.
//
// It is a leaf (standard library and a YAML parser only), so its fuzz target compiles little.
package load

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Well-known metric names of a curve. Any other name is a custom metric's total value.
const (
	// CPU is the total CPU demand over all pods, in millicores.
	CPU = "cpu"
	// Memory is the total memory demand over all pods, in bytes.
	Memory = "memory"
)

// Interpolation says how demand moves between two points.
type Interpolation int

const (
	// Step holds each point's values until the next point (the default).
	Step Interpolation = iota
	// Linear moves each value in a straight line from one point to the next.
	Linear
)

func (i Interpolation) String() string {
	if i == Linear {
		return "linear"
	}
	return "step"
}

// Curve is demand over time, piecewise: each point gives every metric's total value at its time.
type Curve struct {
	// Metrics are the curve's metric names in the file's order.
	Metrics []string
	// Points are sorted by At, strictly increasing, the first at 0; each has a value for every
	// metric.
	Points        []Point
	Interpolation Interpolation

	// namesLine is the file line naming the metrics (the CSV header), for Require's errors.
	namesLine int
}

// Point is every metric's total demand from At on.
type Point struct {
	At     time.Duration
	Values map[string]float64
	// Line is the point's line in its file (0 when built in code).
	Line int
}

// End is the time of the last point: the demand stays at its values after it.
func (c Curve) End() time.Duration {
	if len(c.Points) == 0 {
		return 0
	}
	return c.Points[len(c.Points)-1].At
}

// At returns every metric's value at t (a new map).
func (c Curve) At(t time.Duration) map[string]float64 {
	out := make(map[string]float64, len(c.Metrics))
	for _, m := range c.Metrics {
		out[m] = c.Value(m, t)
	}
	return out
}

// Value returns one metric's value at t: 0 for a metric the curve does not have, the first
// point's value before it, the last point's after it.
func (c Curve) Value(metric string, t time.Duration) float64 {
	i := c.index(t)
	if i < 0 {
		if len(c.Points) == 0 {
			return 0
		}
		return c.Points[0].Values[metric]
	}
	p := c.Points[i]
	if c.Interpolation != Linear || i == len(c.Points)-1 {
		return p.Values[metric]
	}
	q := c.Points[i+1]
	f := float64(t-p.At) / float64(q.At-p.At)
	return p.Values[metric] + f*(q.Values[metric]-p.Values[metric])
}

// index is the last point at or before t (-1 when none is).
func (c Curve) index(t time.Duration) int {
	i, found := slices.BinarySearchFunc(c.Points, t, func(p Point, t time.Duration) int {
		switch {
		case p.At < t:
			return -1
		case p.At > t:
			return 1
		}
		return 0
	})
	if found {
		return i
	}
	return i - 1
}

// Next is the time of the first point after t, and false when none is: with Step
// interpolation, demand is constant from t until then.
func (c Curve) Next(t time.Duration) (time.Duration, bool) {
	i := c.index(t) + 1
	if i >= len(c.Points) {
		return 0, false
	}
	return c.Points[i].At, true
}

// Has reports whether the curve has a metric.
func (c Curve) Has(metric string) bool { return slices.Contains(c.Metrics, metric) }

// Require checks that the curve gives every metric of need, and uses no other: a load file
// whose column no HPA metric reads is more likely a typo than intended.
func (c Curve) Require(file string, need []string) error {
	for _, m := range c.Metrics {
		if !slices.Contains(need, m) {
			return &ParseError{File: file, Line: c.headerLine(), Field: m, Msg: fmt.Sprintf("unknown metric: no metric of the HPA reads it (it reads %s)", strings.Join(need, ", "))}
		}
	}
	for _, m := range need {
		if !c.Has(m) {
			return &ParseError{File: file, Line: c.headerLine(), Field: m, Msg: "missing: the HPA reads this metric but the load gives no demand for it"}
		}
	}
	return nil
}

// headerLine is where the metric names are: the CSV header, or the first point.
func (c Curve) headerLine() int {
	if c.namesLine > 0 {
		return c.namesLine
	}
	if len(c.Points) > 0 {
		return c.Points[0].Line
	}
	return 0
}

// ParseError is a bad load file: one line naming the file, line and field.
type ParseError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		fmt.Fprintf(&b, "field %s: ", e.Field)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// checkValue parses one demand value.
func checkValue(raw string) (float64, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return 0, errors.New("no value (a gap): give every metric a value at every time")
	}
	v, err := parseFloat(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", raw)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a finite number", raw)
	}
	if v < 0 {
		return 0, fmt.Errorf("%q is negative", raw)
	}
	if v > maxValue {
		return 0, fmt.Errorf("%q is larger than %g", raw, maxValue)
	}
	return v, nil
}

// maxValue keeps totals within what int64 milli-units hold once spread over pods.
const maxValue = 1e15

// maxTime bounds a curve to a year: a simulation is a day or a week, never centuries.
const maxTime = 366 * 24 * time.Hour

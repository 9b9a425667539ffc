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
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/internal/fileerr"
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
			return &ParseError{File: file, Line: c.headerLine(), Field: m, Err: fmt.Errorf("unknown metric: no metric of the HPA reads it (it reads %s)", strings.Join(need, ", "))}
		}
	}
	for _, m := range need {
		if !c.Has(m) {
			return &ParseError{File: file, Line: c.headerLine(), Field: m, Err: errors.New("missing: the HPA reads this metric but the load gives no demand for it")}
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
type ParseError = fileerr.Error

// checkValue parses one demand value of metric: a number in the metric's unit (cpu millicores,
// memory bytes, a custom metric its own), as load files always had it, or a Kubernetes quantity
// with a suffix (150m, 2Gi, 2k) read as Kubernetes reads it for the metric's resource: cpu in
// cores, so 150m is 150 millicores.
func checkValue(metric, raw string) (float64, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return 0, errors.New("no value (a gap): give every metric a value at every time")
	}
	v, err := parseFloat(s)
	if err == nil && metric == CPU && v != math.Trunc(v) {
		// Kubernetes reads a bare 1.5 as cores; here a bare number is millicores, and a
		// fraction of one is surely cores meant.
		return 0, fmt.Errorf("%q would be a fraction of a millicore: a bare cpu number is millicores; give %gm for %s cores, or %g", raw, v*1000, s, v*1000)
	}
	if err != nil {
		shift := 0
		if metric == CPU {
			shift = 3
		}
		var ok bool
		if v, ok = quantity(s, shift); !ok {
			return 0, fmt.Errorf("%q %s", raw, unitHint(metric))
		}
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a finite number", raw)
	}
	if v < 0 {
		return 0, fmt.Errorf("%q is negative", raw)
	}
	if v > maxValue {
		return 0, fmt.Errorf("%q is larger than %g%s", raw, maxValue, unitName(metric))
	}
	return v, nil
}

// unitHint says, after a value it could not read, what a value of metric is.
func unitHint(metric string) string {
	switch metric {
	case CPU:
		return "is not a CPU amount: give the total over all pods in millicores (1500) or as a quantity (1500m)"
	case Memory:
		return "is not a memory amount: give the total over all pods in bytes (268435456) or as a quantity (256Mi, 2Gi)"
	}
	return "is not a number: give the metric's total over all pods (60.5) or a quantity (500m, 2k)"
}

// unitName is " millicores" or " bytes" for a resource, "" for a custom metric.
func unitName(metric string) string {
	switch metric {
	case CPU:
		return " millicores"
	case Memory:
		return " bytes"
	}
	return ""
}

// quantity reads s as a Kubernetes quantity with a suffix (150m, 1.5Gi, 2k: a signed decimal
// then a decimal or binary SI suffix, as resource.ParseQuantity reads them) and returns its
// value times 10^shift; false when s is not one. A quantity without a suffix, or with an
// exponent (1e3), is a number, which the caller reads. The package is a leaf for its fuzz
// target, so this is not k8s.io/apimachinery's parser; plugin/simulate's tests hold the two
// to the same values.
func quantity(s string, shift int) (float64, bool) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	var digits strings.Builder
	digits.WriteString(s[:i])
	n, frac, dot := 0, 0, false
scan:
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits.WriteByte(c)
			n++
			if dot {
				frac++
			}
		case c == '.' && !dot:
			dot = true
		default:
			break scan
		}
	}
	exp10, exp2, ok := suffix(s[i:])
	if n == 0 || !ok {
		return 0, false
	}
	// The digits without their point, times a power of ten: parsed at once, so that 150m of
	// cpu is exactly 150 millicores.
	v, err := strconv.ParseFloat(fmt.Sprintf("%se%d", digits.String(), exp10+shift-frac), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return math.Ldexp(v, exp2), true
}

// suffix is a quantity suffix's power of ten or of two; false for no suffix or an unknown one.
func suffix(s string) (exp10, exp2 int, ok bool) {
	switch s {
	case "m":
		return -3, 0, true
	case "k":
		return 3, 0, true
	case "M":
		return 6, 0, true
	case "G":
		return 9, 0, true
	case "T":
		return 12, 0, true
	case "P":
		return 15, 0, true
	case "E":
		return 18, 0, true
	case "Ki":
		return 0, 10, true
	case "Mi":
		return 0, 20, true
	case "Gi":
		return 0, 30, true
	case "Ti":
		return 0, 40, true
	case "Pi":
		return 0, 50, true
	case "Ei":
		return 0, 60, true
	}
	return 0, 0, false
}

// maxValue keeps totals within what int64 milli-units hold once spread over pods.
const maxValue = 1e15

// maxTime bounds a curve to a year: a simulation is a day or a week, never centuries.
const maxTime = 366 * 24 * time.Hour

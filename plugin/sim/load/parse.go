package load

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// APIVersion and Kind name a YAML load file.
const (
	APIVersion = "hpa.kubectl-hpa.io/v1alpha1"
	Kind       = "Load"
)

// Parse reads a load file: CSV (`time,cpu,...`, a header then one row per time) when name ends
// in .csv, YAML (`kind: Load`) when it ends in .yaml or .yml, otherwise whichever the content
// looks like. A value is a number in its metric's unit or a Kubernetes quantity (checkValue).
// name is used in errors only, which are *ParseError: "FILE:LINE: field X: ...".
func Parse(name string, data []byte) (Curve, error) {
	var (
		c   Curve
		err error
	)
	switch strings.ToLower(filepath.Ext(name)) {
	case ".csv":
		c, err = parseCSV(name, data)
	case ".yaml", ".yml":
		c, err = parseYAML(name, data)
	default:
		if looksLikeYAML(data) {
			c, err = parseYAML(name, data)
		} else {
			c, err = parseCSV(name, data)
		}
	}
	if err != nil {
		return Curve{}, err
	}
	if err := c.check(name); err != nil {
		return Curve{}, err
	}
	return c, nil
}

// looksLikeYAML: the first line that is not blank or a comment is a "key:" line, not CSV.
func looksLikeYAML(data []byte) bool {
	for line := range bytes.Lines(data) {
		s := strings.TrimSpace(string(line))
		if s == "" || strings.HasPrefix(s, "#") || s == "---" {
			continue
		}
		return !strings.Contains(s, ",") && strings.Contains(s, ":")
	}
	return false
}

// check enforces what both formats promise: points sorted, unique, starting at 0.
func (c Curve) check(name string) error {
	if len(c.Points) == 0 {
		return &ParseError{File: name, Line: c.namesLine, Err: errors.New("no points: give the demand at time 0 at least")}
	}
	if len(c.Metrics) == 0 {
		return &ParseError{File: name, Line: c.headerLine(), Err: errors.New("no metric: name at least one (cpu, memory or a custom metric)")}
	}
	for i, p := range c.Points {
		if i == 0 {
			if p.At != 0 {
				return &ParseError{File: name, Line: p.Line, Field: "time", Err: fmt.Errorf("the first point is at %s: the demand must start at time 0 (a gap before it)", p.At)}
			}
			continue
		}
		prev := c.Points[i-1]
		switch {
		case p.At == prev.At:
			return &ParseError{File: name, Line: p.Line, Field: "time", Err: fmt.Errorf("time %s appears twice (also on line %d)", p.At, prev.Line)}
		case p.At < prev.At:
			return &ParseError{File: name, Line: p.Line, Field: "time", Err: fmt.Errorf("time %s comes after %s (line %d): times must increase", p.At, prev.At, prev.Line)}
		}
	}
	return nil
}

func parseCSV(name string, data []byte) (Curve, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.Comment = '#'
	r.TrimLeadingSpace = true
	r.ReuseRecord = true
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return Curve{}, &ParseError{File: name, Err: errors.New("empty: a CSV load needs a header (time,cpu,...) and rows")}
	}
	if err != nil {
		return Curve{}, csvError(name, err)
	}
	line, _ := r.FieldPos(0)
	c := Curve{namesLine: line}
	if strings.TrimSpace(header[0]) != "time" {
		return Curve{}, &ParseError{File: name, Line: line, Field: strings.TrimSpace(header[0]), Err: errors.New(`the first column must be "time"`)}
	}
	for _, h := range header[1:] {
		m := strings.TrimSpace(h)
		if err := checkMetricName(m, c.Metrics); err != nil {
			return Curve{}, &ParseError{File: name, Line: line, Field: m, Err: err}
		}
		c.Metrics = append(c.Metrics, m)
	}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Curve{}, csvError(name, err)
		}
		line, _ := r.FieldPos(0)
		at, err := parseTime(rec[0])
		if err != nil {
			return Curve{}, &ParseError{File: name, Line: line, Field: "time", Err: err}
		}
		p := Point{At: at, Values: make(map[string]float64, len(c.Metrics)), Line: line}
		for i, m := range c.Metrics {
			v, err := checkValue(m, rec[i+1])
			if err != nil {
				l, _ := r.FieldPos(i + 1)
				return Curve{}, &ParseError{File: name, Line: l, Field: m, Err: err}
			}
			p.Values[m] = v
		}
		c.Points = append(c.Points, p)
	}
	return c, nil
}

// csvError turns encoding/csv's error (wrong field count, a stray quote) into one line.
func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		msg := pe.Err.Error()
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			msg = "wrong number of fields: every row needs a time and one value per metric of the header (a gap?)"
		}
		return &ParseError{File: name, Line: pe.Line, Err: errors.New(msg)}
	}
	return &ParseError{File: name, Err: err}
}

// checkMetricName refuses an empty, repeated or odd metric name (and "time" again).
func checkMetricName(m string, seen []string) error {
	switch m {
	case "":
		return errors.New("a metric column has no name")
	case "time":
		return errors.New(`"time" is the first column only`)
	}
	for _, s := range seen {
		if s == m {
			return errors.New("the metric is named twice")
		}
	}
	for _, r := range m {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.:/", r)) {
			return fmt.Errorf("unknown column: %q is not a metric name (cpu, memory, or a custom metric's name of letters, digits and _-.:/)", m)
		}
	}
	return nil
}

// parseTime reads a time offset: a Go duration ("90s", "1h30m") or a number of seconds.
func parseTime(raw string) (time.Duration, error) {
	s := strings.TrimSpace(raw)
	if s == "" {
		return 0, errors.New("no time (a gap)")
	}
	var d time.Duration
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		if secs != secs || secs < -maxTime.Seconds() || secs > maxTime.Seconds() {
			return 0, fmt.Errorf("%q is out of range (0 to %s)", raw, maxTime)
		}
		d = time.Duration(secs * float64(time.Second))
	} else {
		d, err = time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q is neither a duration (90s, 1h30m) nor a number of seconds", raw)
		}
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", raw)
	}
	if d > maxTime {
		return 0, fmt.Errorf("%q is longer than %s", raw, maxTime)
	}
	return d, nil
}

func parseFloat(s string) (float64, error) { return strconv.ParseFloat(s, 64) }

// parseYAML reads
//
//	apiVersion: hpa.kubectl-hpa.io/v1alpha1   # optional
//	kind: Load
//	interpolation: step | linear              # optional, step by default
//	points:
//	- {at: 0s, cpu: 150}
//	- {at: 2m, cpu: 900}
//
// walking yaml.v3's nodes so that every error names its line.
func parseYAML(name string, data []byte) (Curve, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return Curve{}, &ParseError{File: name, Line: yamlErrLine(err), Err: errors.New("not YAML: " + yamlErrText(err))}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return Curve{}, &ParseError{File: name, Err: errors.New("empty: a YAML load needs kind: Load and points")}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return Curve{}, &ParseError{File: name, Line: root.Line, Err: errors.New("not a mapping: a YAML load has kind: Load and points")}
	}
	var (
		c      Curve
		kind   bool
		points *yaml.Node
	)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "apiVersion":
			if v.Value != APIVersion {
				return Curve{}, &ParseError{File: name, Line: v.Line, Field: "apiVersion", Err: fmt.Errorf("%q is not %s", v.Value, APIVersion)}
			}
		case "kind":
			if v.Value != Kind {
				return Curve{}, &ParseError{File: name, Line: v.Line, Field: "kind", Err: fmt.Errorf("%q is not %s", v.Value, Kind)}
			}
			kind = true
		case "interpolation":
			switch v.Value {
			case "step":
				c.Interpolation = Step
			case "linear":
				c.Interpolation = Linear
			default:
				return Curve{}, &ParseError{File: name, Line: v.Line, Field: "interpolation", Err: fmt.Errorf("%q is neither step nor linear", v.Value)}
			}
		case "points":
			if v.Kind != yaml.SequenceNode {
				return Curve{}, &ParseError{File: name, Line: v.Line, Field: "points", Err: errors.New("not a list")}
			}
			points = v
		default:
			return Curve{}, &ParseError{File: name, Line: k.Line, Field: k.Value, Err: errors.New("unknown field (apiVersion, kind, interpolation, points)")}
		}
	}
	if !kind {
		return Curve{}, &ParseError{File: name, Line: root.Line, Field: "kind", Err: errors.New("missing: a YAML load says kind: Load")}
	}
	if points == nil {
		return Curve{}, &ParseError{File: name, Line: root.Line, Field: "points", Err: errors.New("missing: give the demand at time 0 at least")}
	}
	for i, pn := range points.Content {
		p, err := yamlPoint(name, &c, i, pn)
		if err != nil {
			return Curve{}, err
		}
		c.Points = append(c.Points, p)
	}
	return c, nil
}

// yamlPoint reads the point pn, the i-th of the curve c (the first names c's metrics).
func yamlPoint(name string, c *Curve, i int, pn *yaml.Node) (Point, error) {
	if pn.Kind != yaml.MappingNode {
		return Point{}, &ParseError{File: name, Line: pn.Line, Field: fmt.Sprintf("points[%d]", i), Err: errors.New("not a mapping of at and metric values")}
	}
	p := Point{Line: pn.Line, Values: map[string]float64{}}
	var (
		hasAt bool
		names []string
	)
	for j := 0; j+1 < len(pn.Content); j += 2 {
		k, v := pn.Content[j], pn.Content[j+1]
		field := fmt.Sprintf("points[%d].%s", i, k.Value)
		if k.Value == "at" {
			if v.Kind != yaml.ScalarNode {
				return Point{}, &ParseError{File: name, Line: v.Line, Field: field, Err: errors.New("not a time")}
			}
			at, err := parseTime(v.Value)
			if err != nil {
				return Point{}, &ParseError{File: name, Line: v.Line, Field: field, Err: err}
			}
			p.At, hasAt = at, true
			continue
		}
		if err := checkMetricName(k.Value, names); err != nil {
			return Point{}, &ParseError{File: name, Line: k.Line, Field: field, Err: err}
		}
		names = append(names, k.Value)
		if v.Kind != yaml.ScalarNode {
			return Point{}, &ParseError{File: name, Line: v.Line, Field: field, Err: errors.New("a list or mapping " + unitHint(k.Value))}
		}
		val, err := checkValue(k.Value, v.Value)
		if err != nil {
			return Point{}, &ParseError{File: name, Line: v.Line, Field: field, Err: err}
		}
		p.Values[k.Value] = val
	}
	if !hasAt {
		return Point{}, &ParseError{File: name, Line: pn.Line, Field: fmt.Sprintf("points[%d].at", i), Err: errors.New("missing: every point says when (at: 90s)")}
	}
	if i == 0 {
		c.Metrics, c.namesLine = names, pn.Line
	} else {
		for _, m := range c.Metrics {
			if _, ok := p.Values[m]; !ok {
				return Point{}, &ParseError{File: name, Line: pn.Line, Field: fmt.Sprintf("points[%d].%s", i, m), Err: fmt.Errorf("missing (a gap): the first point (line %d) gives %s, so every point must", c.namesLine, m)}
			}
		}
		for _, m := range names {
			if !c.Has(m) {
				return Point{}, &ParseError{File: name, Line: pn.Line, Field: fmt.Sprintf("points[%d].%s", i, m), Err: fmt.Errorf("unknown metric: the first point (line %d) names %s only", c.namesLine, strings.Join(c.Metrics, ", "))}
			}
		}
	}
	return p, nil
}

// yamlErrLine digs the line out of yaml.v3's "yaml: line N: ..." message (0 when absent).
func yamlErrLine(err error) int {
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, _, ok := strings.Cut(rest, ":"); ok {
			if v, err := strconv.Atoi(n); err == nil {
				return v
			}
		}
	}
	return 0
}

// yamlErrText is the message without its "yaml: line N:" prefix (the line is said already).
func yamlErrText(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if _, after, ok := strings.Cut(rest, ": "); ok {
			return after
		}
	}
	return msg
}

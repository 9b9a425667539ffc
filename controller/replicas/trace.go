package replicas

import (
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// decision is a Decision being built. Every step's text is written into one buffer and becomes
// a substring of one string at the end, and the hot steps format their numbers with strconv
// instead of fmt: a decision then costs three allocations for its whole trace text (the
// buffer, the step ends, the string) rather than one per step plus one per formatted argument. With omit (Input.OmitTrace) no step is
// written and formatting costs nothing. A decision holds no pointer into itself, so that
// Decide's stays on the stack.
type decision struct {
	Decision
	buf  []byte
	ends []int
	omit bool
}

func (d *decision) init(traceCap int, omit bool) {
	d.omit = omit
	if omit {
		return
	}
	d.buf = make([]byte, 0, 1024)
	d.ends = make([]int, 0, traceCap)
	d.Trace = make([]Step, 0, traceCap)
}

// finish gives every step its text.
func (d *decision) finish() {
	if d.omit {
		return
	}
	s := string(d.buf)
	start := 0
	for i, end := range d.ends {
		d.Trace[i].Text = s[start:end]
		start = end
	}
}

func (d *decision) trace(stage string, metric int, text string) {
	d.line().s(text).end(stage, metric)
}

// tracing says whether steps are written: a step whose text costs an allocation to build
// (fmt.Sprintf) is built only then.
func (d *decision) tracing() bool { return !d.omit }

// line starts a step whose text is appended piece by piece and which end closes; without
// tracing it writes nothing (a line with no decision).
func (d *decision) line() line {
	if d.omit {
		return line{}
	}
	return line{d}
}

type line struct{ d *decision }

func (l line) s(v string) line {
	if l.d != nil {
		l.d.buf = append(l.d.buf, v...)
	}
	return l
}

// i is %d.
func (l line) i(v int64) line {
	if l.d != nil {
		l.d.buf = strconv.AppendInt(l.d.buf, v, 10)
	}
	return l
}

// f3 is %.3f.
func (l line) f3(v float64) line {
	if l.d != nil {
		l.d.buf = strconv.AppendFloat(l.d.buf, v, 'f', 3, 64)
	}
	return l
}

// g is %g.
func (l line) g(v float64) line {
	if l.d != nil {
		l.d.buf = strconv.AppendFloat(l.d.buf, v, 'g', -1, 64)
	}
	return l
}

// q is %q of a string.
func (l line) q(v string) line {
	if l.d != nil {
		l.d.buf = strconv.AppendQuote(l.d.buf, v)
	}
	return l
}

// dur is %s of a duration.
func (l line) dur(v time.Duration) line {
	if l.d != nil {
		l.d.buf = append(l.d.buf, v.String()...)
	}
	return l
}

// milli is milli(v): the milli-value as a decimal quantity prints.
func (l line) milli(v int64) line {
	if l.d == nil {
		return l
	}
	var scratch [32]byte
	q := resource.NewMilliQuantity(v, resource.DecimalSI)
	num, suffix := q.CanonicalizeBytes(scratch[:0])
	l.d.buf = append(append(l.d.buf, num...), suffix...)
	return l
}

func (l line) end(stage string, metric int) {
	if l.d == nil {
		return
	}
	l.d.Trace = append(l.d.Trace, Step{Stage: stage, Metric: metric})
	l.d.ends = append(l.d.ends, len(l.d.buf))
}

// Package sampleset holds one metric's per-pod samples as they go from a metrics decoder to
// the decision core: Sample, one pod's value, and Set, a sample per pod name. A leaf of the
// standard library only, which both the decoders (metrics/decode) and the core import.
package sampleset

import (
	"math"
	"time"
)

// Sample is one pod's value of a metric (the decision core's sampleset.Sample).
type Sample struct {
	// MilliValue is the value in milli-units (millicores for cpu, milli-bytes for memory).
	MilliValue int64
	// Timestamp is when the value was observed, as Timestamp(t) gives it (Unix nanoseconds, 0
	// for no time; Time turns it back): 8 bytes without a pointer instead of a time.Time's 24
	// with one. Window is the period the value covers.
	Timestamp int64
	Window    time.Duration
}

// Timestamp is Sample.Timestamp for t: its Unix time in nanoseconds, except that the zero
// time is 0 (the Unix epoch itself becomes 1ns after it), and that times before 1677-09-22 or
// after 2262-04-11 (beyond an int64 of nanoseconds) are clamped to the nearest representable
// one (the decision core's sampleset.Timestamp).
func Timestamp(t time.Time) int64 {
	if sec := t.Unix(); sec > math.MinInt64/1_000_000_000 && sec < math.MaxInt64/1_000_000_000 {
		if ns := t.UnixNano(); ns != 0 { // this far from the limits it cannot overflow
			return ns
		}
		return 1
	}
	switch {
	case t.IsZero():
		return 0
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// Time is the instant of a Sample.Timestamp, in UTC (the zero time for 0).
func Time(ts int64) time.Time {
	if ts == 0 {
		return time.Time{}
	}
	return time.Unix(0, ts).UTC()
}

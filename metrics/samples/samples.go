// Package samples turns what a metrics source answered (Heapster's two APIs, a metrics.k8s.io
// PodMetrics list) into per-pod values in milli-units, refusing what cannot be load: negative
// or absurdly large values, unnamed or repeated pods, stale timestamps, malformed quantities.
//
// It is a leaf of package metrics, importing only the standard library, k8s.io/api and
// k8s.io/apimachinery, so that its fuzz targets compile (and instrument) a small binary
// instead of all of client-go.
package samples

import (
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// PodSample is one pod's value of a metric (the decision core's replicas.Sample).
type PodSample struct {
	// MilliValue is the value in milli-units (millicores for cpu, milli-bytes for memory).
	MilliValue int64
	// Timestamp is when the value was observed, as Timestamp(t) gives it (Unix nanoseconds, 0
	// for no time; Time turns it back): without a time.Time's pointer and 16 of its bytes, the
	// garbage collector has no pointer to follow in a sync's samples. Window is the period the value covers.
	Timestamp int64
	Window    time.Duration
}

// Timestamp is PodSample.Timestamp for t: its Unix time in nanoseconds, except that the zero
// time is 0 (the Unix epoch itself becomes 1ns after it), and that times before 1677-09-22 or
// after 2262-04-11 (beyond an int64 of nanoseconds) are clamped to the nearest representable
// one. It is the decision core's replicas.SampleTimestamp (the controller's tests check that
// they agree).
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

// Time is the instant of a PodSample.Timestamp, in UTC (the zero time for 0).
func Time(ts int64) time.Time {
	if ts == 0 {
		return time.Time{}
	}
	return time.Unix(0, ts).UTC()
}

// MaxMilliValue is the largest milli-value a sample may carry (1e16: 1e13 cores, or about
// 9 TiB of memory, per pod). Anything larger is treated as garbage rather than load, so
// that the controller's sums over pods cannot overflow int64.
const MaxMilliValue int64 = 1e16

// MilliValue converts q to milli-units, refusing negative and absurdly large values
// instead of letting Quantity.MilliValue saturate or wrap. The magnitude is checked on
// the float approximation first: comparing or printing a quantity with a huge exponent
// exactly takes practically forever.
func MilliValue(q resource.Quantity) (int64, error) {
	f := q.AsApproximateFloat64()
	if q.Sign() < 0 {
		return 0, fmt.Errorf("negative value %g", f)
	}
	if f > 2*float64(MaxMilliValue)/1000 || q.Cmp(*resource.NewMilliQuantity(MaxMilliValue, resource.DecimalSI)) > 0 {
		return 0, fmt.Errorf("absurdly large value %g (more than %d milli-units)", f, MaxMilliValue)
	}
	return q.MilliValue(), nil
}

// CheckFresh refuses a sample older than maxAge at now; maxAge <= 0 disables the check.
// Timestamps in the future (clock skew) are accepted. what names the sample in the error.
func CheckFresh(ts, now time.Time, maxAge time.Duration, what string) error {
	if maxAge <= 0 {
		return nil
	}
	if ts.IsZero() {
		return fmt.Errorf("%s has no timestamp, so its age is unknown; the source is not collecting (raise or disable the check with --metrics-max-age=0)", what)
	}
	if age := now.Sub(ts); age > maxAge {
		return fmt.Errorf("%s is stale: its timestamp %s is %s old, more than --metrics-max-age=%s; the source has stopped collecting (check its logs), or raise --metrics-max-age",
			what, ts.UTC().Format(time.RFC3339), age.Round(time.Second), maxAge)
	}
	return nil
}

// BodySnippet quotes the start of a body for an error message.
func BodySnippet(body []byte) string {
	const limit = 64
	if len(body) > limit {
		return fmt.Sprintf("%q...", body[:limit])
	}
	return fmt.Sprintf("%q", body)
}

// addMilli adds two non-negative milli-values without leaving the sane range.
func addMilli(a, b int64) (int64, error) {
	if a > MaxMilliValue-b {
		return 0, fmt.Errorf("sum exceeds %d milli-units", MaxMilliValue)
	}
	return a + b, nil
}

// scaleFloat computes int64(avg*1000) as the Heapster-era client did, refusing results
// outside the sane range (NaN cannot come from JSON, infinities can come from overflow).
func scaleFloat(avg float64) (int64, error) {
	m := avg * 1000
	if math.IsNaN(m) || m < 0 {
		return 0, fmt.Errorf("negative value %g", avg)
	}
	if m > float64(MaxMilliValue) {
		return 0, fmt.Errorf("absurdly large value %g (more than %d milli-units)", avg, MaxMilliValue)
	}
	return int64(m), nil
}

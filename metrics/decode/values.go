// Package decode turns what a metrics source answered (Heapster's two APIs, a metrics.k8s.io
// PodMetrics list) into per-pod values in milli-units, refusing what cannot be load: negative
// or absurdly large values, unnamed or repeated pods, stale timestamps, malformed quantities.
//
// It is a leaf of package metrics, importing only the standard library, k8s.io/api and
// k8s.io/apimachinery, so that its fuzz targets compile (and instrument) a small binary
// instead of all of client-go.
package decode

import (
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

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

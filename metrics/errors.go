package metrics

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
)

// MaxMilliValue is the largest milli-value a sample may carry (1e16: 1e13 cores, or about
// 9 TiB of memory, per pod). Anything larger is treated as garbage rather than load, so
// that the controller's sums over pods cannot overflow int64.
const MaxMilliValue int64 = 1e16

// DefaultMaxAge is how old a sample may be before it is refused as stale (see Options.MaxAge).
// Heapster is asked for the last 5 minutes, metrics-server reports within a scrape
// interval and adapters report at query time; ten minutes leaves room for slow adapters
// while still catching a source that stopped collecting.
const DefaultMaxAge = 10 * time.Minute

// errReadTimeout is the cause of a context ended by a read timeout (see
// HeapsterConfig.Timeout, Options.Timeout).
var errReadTimeout = errors.New("metrics read timed out")

// SourceFailure marks an error of a metrics source that answered badly or not at all
// (see IsSourceFailure).
type SourceFailure struct{ Err error }

func (e SourceFailure) Error() string { return e.Err.Error() }
func (e SourceFailure) Unwrap() error { return e.Err }

// IsSourceFailure reports whether err, or an error it wraps, says that the metrics source
// failed: it could not be reached or refused, answered an error status or too late, or
// answered something that cannot be trusted (not the JSON asked for, no items, stale,
// repeated or miscounted samples). Errors about what was asked (a metric type the source
// does not serve, no permission, no such metric) are not. Every client marks its errors.
func IsSourceFailure(err error) bool {
	var sf SourceFailure
	return errors.As(err, &sf)
}

// milliValue converts q to milli-units, refusing negative and absurdly large values
// instead of letting Quantity.MilliValue saturate or wrap. The magnitude is checked on
// the float approximation first: comparing or printing a quantity with a huge exponent
// exactly takes practically forever.
func milliValue(q resource.Quantity) (int64, error) {
	f := q.AsApproximateFloat64()
	if q.Sign() < 0 {
		return 0, fmt.Errorf("negative value %g", f)
	}
	if f > 2*float64(MaxMilliValue)/1000 || q.Cmp(*resource.NewMilliQuantity(MaxMilliValue, resource.DecimalSI)) > 0 {
		return 0, fmt.Errorf("absurdly large value %g (more than %d milli-units)", f, MaxMilliValue)
	}
	return q.MilliValue(), nil
}

// checkFresh refuses a sample older than maxAge at now; maxAge <= 0 disables the check.
// Timestamps in the future (clock skew) are accepted.
func checkFresh(ts, now time.Time, maxAge time.Duration, what string) error {
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

// addMilli adds two non-negative milli-values without leaving the sane range.
func addMilli(a, b int64) (int64, error) {
	if a > MaxMilliValue-b {
		return 0, fmt.Errorf("sum exceeds %d milli-units", MaxMilliValue)
	}
	return a + b, nil
}

// isTimeout reports a request that ran out of time: the caller's deadline, our read
// timeout (net/http reports a context's cause), the client's timeout, or the API
// server's own timeout answer.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errReadTimeout) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// bodySnippet quotes the start of a body for an error message.
func bodySnippet(body []byte) string {
	const max = 64
	if len(body) > max {
		return fmt.Sprintf("%q...", body[:max])
	}
	return fmt.Sprintf("%q", body)
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

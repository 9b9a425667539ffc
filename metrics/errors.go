package metrics

import (
	"context"
	"errors"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// DefaultMaxAge is how old a sample may be before it is refused as stale (see Config.MaxAge).
// Heapster is asked for the last 5 minutes, metrics-server reports within a scrape
// interval and adapters report at query time; ten minutes leaves room for slow adapters
// while still catching a source that stopped collecting.
const DefaultMaxAge = 10 * time.Minute

// errReadTimeout is the cause of a context ended by a read timeout (see
// HeapsterConfig.Timeout, Config.Timeout).
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

// MetricNotFound marks an adapter's answer that it has no value for what was asked: a metric
// it does not know (404) or a selector none of its series match (an empty list). The source
// works; the HPA's metric or the adapter's rules are what to change (see AsMetricNotFound).
type MetricNotFound struct {
	// GroupVersion is the API read ("external.metrics.k8s.io/v1beta1"), which lists the
	// metrics the adapter serves.
	GroupVersion string
	Err          error
}

func (e MetricNotFound) Error() string { return e.Err.Error() }
func (e MetricNotFound) Unwrap() error { return e.Err }

// AsMetricNotFound is the MetricNotFound err is or wraps, if any.
func AsMetricNotFound(err error) (MetricNotFound, bool) {
	var nf MetricNotFound
	ok := errors.As(err, &nf)
	return nf, ok
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

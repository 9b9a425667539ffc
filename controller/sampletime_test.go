package controller

import (
	"math"
	"testing"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/samples"
)

// The metrics layer stamps a sample with samples.Timestamp and the core reads it back with
// replicas.SampleTime: the two packages keep one copy each of the encoding (neither imports the
// other), and this test keeps them the same.
func TestSampleTimestampEncodingIsTheSameInMetricsAndCore(t *testing.T) {
	for _, at := range []time.Time{
		{},
		time.Unix(0, 0),
		time.Unix(0, 1),
		time.Unix(0, -1),
		time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC),
		time.Date(2026, 11, 30, 14, 0, 0, 0, time.FixedZone("UTC+2", 2*3600)),
		time.Unix(0, math.MinInt64),
		time.Unix(0, math.MaxInt64),
		time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Time{}.Add(time.Nanosecond),
	} {
		got, want := samples.Timestamp(at), replicas.SampleTimestamp(at)
		if got != want {
			t.Errorf("%s: samples.Timestamp = %d, replicas.SampleTimestamp = %d", at, got, want)
		}
		if back, core := samples.Time(got), replicas.SampleTime(got); !back.Equal(core) || back.IsZero() != core.IsZero() {
			t.Errorf("%d: samples.Time = %s, replicas.SampleTime = %s", got, back, core)
		}
	}
}

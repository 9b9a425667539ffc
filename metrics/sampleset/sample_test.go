package sampleset

import (
	"math"
	"testing"
	"time"
)

func TestTimestampRoundTrips(t *testing.T) {
	local := time.FixedZone("UTC+2", 2*3600)
	for _, tc := range []struct {
		name string
		in   time.Time
		want time.Time // Time(Timestamp(in))
	}{
		{"the zero time stays the zero time", time.Time{}, time.Time{}},
		{"an instant keeps its nanoseconds", time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC), time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC)},
		{"the zone is dropped, not the instant", time.Date(2026, 11, 30, 14, 0, 0, 0, local), time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)},
		{"the Unix epoch moves 1ns later, since 0 is the zero time", time.Unix(0, 0), time.Unix(0, 1).UTC()},
		{"the earliest representable instant is kept", time.Unix(0, math.MinInt64), time.Unix(0, math.MinInt64).UTC()},
		{"the latest representable instant is kept", time.Unix(0, math.MaxInt64), time.Unix(0, math.MaxInt64).UTC()},
		{"an earlier one is clamped", time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(0, math.MinInt64).UTC()},
		{"a later one is clamped", time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(0, math.MaxInt64).UTC()},
		{"year 1 but not the zero time is clamped", time.Time{}.Add(time.Nanosecond), time.Unix(0, math.MinInt64).UTC()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Time(Timestamp(tc.in))
			if !got.Equal(tc.want) || got.IsZero() != tc.want.IsZero() {
				t.Errorf("Time(Timestamp(%s)) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
	if ts := (Sample{}).Timestamp; !Time(ts).IsZero() {
		t.Errorf("a Sample without a Timestamp is at %s, want the zero time", Time(ts))
	}
}

package decode

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// fixedTimestamp is the reference time of the decoders' tests (the Heapster era's).
var fixedTimestamp = time.Date(2015, time.November, 10, 12, 30, 0, 0, time.UTC)

func pt(at time.Duration, v string) modelPoint {
	return modelPoint{Timestamp: fixedTimestamp.Add(at), Value: json.Number(v)}
}

func ptf(at time.Duration, v string, f float64) modelPoint {
	p := pt(at, v)
	p.FloatValue = &f
	return p
}

func TestCollapseSamplesAveragesTheLastMinute(t *testing.T) {
	tests := []struct {
		name       string
		points     []modelPoint
		want       int64
		wantNewest time.Duration
		wantOK     bool
		wantErr    string
	}{
		{name: "empty series has no value", points: nil},
		// Kubernetes 1.11's testCollapseTimeSamples (never run upstream: its name is lower
		// case) expected 75; the client multiplies by 1000.
		{name: "a point exactly one minute older than the newest is outside the minute",
			points: []modelPoint{pt(0, "50"), pt(-15*time.Second, "100"), pt(-60*time.Second, "100000")},
			want:   75000, wantOK: true},
		{name: "the newest point need not come first",
			points: []modelPoint{pt(-30*time.Second, "1"), pt(10*time.Second, "3"), pt(-50*time.Second, "100")},
			want:   2000, wantNewest: 10 * time.Second, wantOK: true},
		{name: "integer division truncates", points: []modelPoint{pt(0, "1"), pt(-time.Second, "1"), pt(-2*time.Second, "2")},
			want: 1333, wantOK: true},
		{name: "a missing value counts as zero, as Go decoded Heapster's uint64",
			points: []modelPoint{pt(0, "4"), {Timestamp: fixedTimestamp.Add(-time.Second)}},
			want:   2000, wantOK: true},
		{name: "a newest float point averages the float values of the minute",
			points: []modelPoint{ptf(0, "0", 1.5), ptf(-10*time.Second, "0", 2.25), pt(-20*time.Second, "100")},
			want:   1875, wantOK: true},
		{name: "floats are truncated after scaling", points: []modelPoint{ptf(0, "0", 0.0019)},
			want: 1, wantOK: true},
		{name: "a newest integer point ignores float values", points: []modelPoint{pt(0, "3"), ptf(-time.Second, "1", 100)},
			want: 2000, wantOK: true},
		{name: "a negative value is refused", points: []modelPoint{pt(0, "-1")}, wantErr: "negative value -1"},
		{name: "a fractional value is refused", points: []modelPoint{pt(0, "1.5")}, wantErr: "is not an unsigned integer"},
		{name: "a negative float is refused", points: []modelPoint{ptf(0, "0", -2)}, wantErr: "negative value -2"},
		{name: "a huge float is refused", points: []modelPoint{ptf(0, "0", 1e300)}, wantErr: "absurdly large value"},
		{name: "a value beyond the sane range is refused", points: []modelPoint{pt(0, "10000000000001")}, wantErr: "absurdly large value 10000000000001"},
		{name: "points outside the minute are not checked", points: []modelPoint{pt(0, "1"), pt(-2*time.Minute, "-1")},
			want: 1000, wantOK: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, newest, ok, err := collapseSamples(tc.points, time.Minute)
			checkErr(t, err, tc.wantErr)
			if tc.wantErr != "" {
				return
			}
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("got (%d, %v), want (%d, %v)", got, ok, tc.want, tc.wantOK)
			}
			if ok && !newest.Equal(fixedTimestamp.Add(tc.wantNewest)) {
				t.Errorf("newest %s, want %s", newest, fixedTimestamp.Add(tc.wantNewest))
			}
		})
	}
}

func TestCollapseSamplesSumCannotOverflow(t *testing.T) {
	var pts []modelPoint
	for range 2000 {
		pts = append(pts, pt(0, "10000000000000"))
	}
	_, _, _, err := collapseSamples(pts, time.Minute)
	checkErr(t, err, "overflows")
}

func TestHeapsterPodsSamplesMatchesItemsByPosition(t *testing.T) {
	list := ModelResultList{Items: []modelResult{
		{Metrics: []modelPoint{pt(0, "2")}},
		{Metrics: []modelPoint{pt(-time.Minute, "1")}},
	}}
	got, ts, err := HeapsterPodsSamples([]string{"b", "a"}, list, fixedTimestamp, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]sampleset.Sample{
		"b": {MilliValue: 2000, Timestamp: sampleset.Timestamp(fixedTimestamp), Window: time.Minute},
		"a": {MilliValue: 1000, Timestamp: sampleset.Timestamp(fixedTimestamp.Add(-time.Minute)), Window: time.Minute},
	}
	if diff := cmp.Diff(want, got.Map()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !ts.Equal(fixedTimestamp.Add(-time.Minute)) {
		t.Errorf("time %s", ts)
	}
}

func TestHeapsterPodsSamplesRefusesAPodAskedForTwice(t *testing.T) {
	list := ModelResultList{Items: []modelResult{
		{Metrics: []modelPoint{pt(0, "2")}},
		{Metrics: []modelPoint{pt(0, "3")}},
	}}
	_, _, err := HeapsterPodsSamples([]string{"a", "a"}, list, fixedTimestamp, time.Hour)
	checkErr(t, err, "pod a is listed twice")
}

func TestPodResourceSamplesRefusesBadItems(t *testing.T) {
	body := `{"items":[{"metadata":{"name":""},"timestamp":"2015-11-10T12:30:00Z","containers":[]}]}`
	items, err := HeapsterPodMetrics([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = PodResourceSamples(items, "cpu", "", fixedTimestamp, 0)
	checkErr(t, err, "an item has no pod name")

	body = `{"items":[{"metadata":{"name":"a"},"timestamp":"2015-11-10T12:30:00Z","window":"-1m","containers":[{"name":"c","usage":{"cpu":"1"}}]}]}`
	if items, err = HeapsterPodMetrics([]byte(body)); err != nil {
		t.Fatal(err)
	}
	_, _, err = PodResourceSamples(items, "cpu", "", fixedTimestamp, 0)
	checkErr(t, err, "negative window")

	for _, order := range []string{
		`{"metadata":{"name":"a"},"timestamp":"2015-11-10T12:30:00Z","containers":[{"name":"c","usage":{"memory":"1Mi"}}]},{"metadata":{"name":"a"},"timestamp":"2015-11-10T12:30:00Z","containers":[{"name":"c","usage":{"cpu":"1"}}]}`,
		`{"metadata":{"name":"a"},"timestamp":"2015-11-10T12:30:00Z","containers":[{"name":"c","usage":{"cpu":"1"}}]},{"metadata":{"name":"a"},"timestamp":"2015-11-10T12:30:00Z","containers":[{"name":"c","usage":{"memory":"1Mi"}}]}`,
		`{"metadata":{"name":"a"},"timestamp":"2015-11-10T12:30:00Z","containers":[]},{"metadata":{"name":"a"},"timestamp":"2015-11-10T12:30:00Z","containers":[]}`,
	} {
		if items, err = HeapsterPodMetrics([]byte(`{"items":[` + order + `]}`)); err != nil {
			t.Fatal(err)
		}
		_, _, err = PodResourceSamples(items, "cpu", "", fixedTimestamp, 0)
		checkErr(t, err, "pod a is listed twice")
	}

	huge := `{"name":"c","usage":{"cpu":"6000000000000"}}`
	body = `{"items":[{"metadata":{"name":"a"},"timestamp":"2015-11-10T12:30:00Z","containers":[` + strings.Repeat(huge+",", 3) + huge + `]}]}`
	if items, err = HeapsterPodMetrics([]byte(body)); err != nil {
		t.Fatal(err)
	}
	_, _, err = PodResourceSamples(items, "cpu", "", fixedTimestamp, 0)
	checkErr(t, err, "cpu summed over containers: sum exceeds")
}

func TestParseQuantityRefusesWhatWouldHang(t *testing.T) {
	tests := []struct {
		raw     string
		want    string
		wantErr string
	}{
		{raw: `"250m"`, want: "250m"},
		{raw: `"52Mi"`, want: "52Mi"},
		{raw: `12`, want: "12"},
		{raw: `"1.5e3"`, want: "1500"},
		{raw: `"1e-1000000000"`, wantErr: "malformed or absurd quantity"},
		{raw: `"1e100"`, wantErr: "malformed or absurd quantity"},
		{raw: `"` + strings.Repeat("9", 65) + `"`, wantErr: "malformed or absurd quantity"},
		{raw: `"12 cores"`, wantErr: "malformed or absurd quantity"},
		{raw: `true`, wantErr: "malformed or absurd quantity"},
		{raw: `"\u0031"`, want: "1"},
	}
	for _, tc := range tests {
		t.Run(tc.raw, func(t *testing.T) {
			q, err := parseQuantity(json.RawMessage(tc.raw))
			checkErr(t, err, tc.wantErr)
			if tc.wantErr == "" && q.String() != tc.want {
				t.Errorf("got %s, want %s", q.String(), tc.want)
			}
		})
	}
}

// checkErr requires no error when want is empty, else an error containing want.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
		t.Fatalf("error %v, want one containing %q", err, want)
	}
}

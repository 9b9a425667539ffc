package load

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseReadsBothFormatsIntoTheSameCurve(t *testing.T) {
	want := Curve{
		Metrics: []string{"cpu", "requests_per_second"},
		Points: []Point{
			{At: 0, Values: map[string]float64{"cpu": 150, "requests_per_second": 10}},
			{At: 90 * time.Second, Values: map[string]float64{"cpu": 900, "requests_per_second": 60.5}},
			{At: 5 * time.Minute, Values: map[string]float64{"cpu": 100, "requests_per_second": 0}},
		},
	}
	for _, tc := range []struct {
		name, file, data string
		interpolation    Interpolation
	}{
		{name: "csv with seconds and durations, comments and spaces", file: "load.csv",
			data: "# a quiet start, a peak, then low\ntime, cpu, requests_per_second\n0,150,10\n1m30s, 900, 60.5\n300,100,0\n"},
		{name: "yaml with step interpolation by default", file: "load.yaml",
			data: "kind: Load\npoints:\n- {at: 0s, cpu: 150, requests_per_second: 10}\n- {at: 90s, cpu: 900, requests_per_second: 60.5}\n- at: 5m\n  cpu: 100\n  requests_per_second: 0\n"},
		{name: "yaml with linear interpolation, recognized without an extension", file: "load", interpolation: Linear,
			data: "apiVersion: hpa.kubectl-hpa.io/v1alpha1\nkind: Load\ninterpolation: linear\npoints:\n- {at: 0, cpu: 150, requests_per_second: 10}\n- {at: 90, cpu: 900, requests_per_second: 60.5}\n- {at: 300, cpu: 100, requests_per_second: 0}\n"},
		{name: "csv recognized without an extension", file: "-",
			data: "time,cpu,requests_per_second\n0,150,10\n90,900,60.5\n300,100,0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.file, []byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			w := want
			w.Interpolation = tc.interpolation
			if diff := cmp.Diff(w, got, cmpopts.IgnoreFields(Point{}, "Line"), cmpopts.IgnoreUnexported(Curve{})); diff != "" {
				t.Errorf("curve (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseReadsKubernetesQuantitiesInTheMetricsUnit: a value is a number in the metric's unit
// (cpu millicores, memory bytes, a custom metric its own), as load files always had it, or a
// Kubernetes quantity read as Kubernetes reads it for the resource (cpu in cores, so 150m is
// 150 millicores).
func TestParseReadsKubernetesQuantitiesInTheMetricsUnit(t *testing.T) {
	want := Curve{
		Metrics: []string{"cpu", "memory", "qps"},
		Points: []Point{
			{At: 0, Values: map[string]float64{"cpu": 150, "memory": 2 << 30, "qps": 0.5}},
			{At: time.Minute, Values: map[string]float64{"cpu": 15, "memory": 1.5, "qps": 1.5}},
			{At: 2 * time.Minute, Values: map[string]float64{"cpu": 1500, "memory": 256 << 20, "qps": 2000}},
			{At: 3 * time.Minute, Values: map[string]float64{"cpu": 2_000_000, "memory": 1e9, "qps": 1000}},
			{At: 4 * time.Minute, Values: map[string]float64{"cpu": 500_000, "memory": 1.5 * (1 << 30), "qps": 0.1}},
		},
	}
	for _, tc := range []struct{ name, file, data string }{
		{"csv", "load.csv", "time,cpu,memory,qps\n0,150m,2Gi,500m\n1m,15,1.5,1.5\n2m,1500,256Mi,2k\n3m,2k,1G,1e3\n4m,.5k,1.5Gi,100m\n"},
		{"yaml", "load.yaml", "kind: Load\npoints:\n- {at: 0, cpu: 150m, memory: 2Gi, qps: 500m}\n- {at: 1m, cpu: 15, memory: 1.5, qps: 1.5}\n" +
			"- {at: 2m, cpu: 1500, memory: 256Mi, qps: 2k}\n- {at: 3m, cpu: 2k, memory: 1G, qps: 1e3}\n- {at: 4m, cpu: .5k, memory: 1.5Gi, qps: 100m}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.file, []byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Point{}, "Line"), cmpopts.IgnoreUnexported(Curve{})); diff != "" {
				t.Errorf("curve (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCurveValue(t *testing.T) {
	step, err := Parse("l.csv", []byte("time,cpu\n0,100\n60,400\n120,100\n"))
	if err != nil {
		t.Fatal(err)
	}
	linear := step
	linear.Interpolation = Linear
	for _, tc := range []struct {
		name string
		c    Curve
		at   time.Duration
		want float64
	}{
		{"step holds a value until the next point", step, 59 * time.Second, 100},
		{"step takes the next value at its time", step, 60 * time.Second, 400},
		{"linear is halfway at half time", linear, 30 * time.Second, 250},
		{"linear goes down too", linear, 90 * time.Second, 250},
		{"the last value holds after the end", linear, time.Hour, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.c.Value("cpu", tc.at); got != tc.want {
				t.Errorf("Value(cpu, %s) = %g, want %g", tc.at, got, tc.want)
			}
		})
	}
}

func TestParseRefusesBadLoadsWithOneLineNamingFileLineAndField(t *testing.T) {
	for _, tc := range []struct {
		name, file, data, want string
	}{
		{"a negative value", "load.csv", "time,cpu\n0,100\n60,-5\n", `load.csv:3: field cpu: "-5" is negative`},
		{"a non-numeric cpu value names its unit", "load.csv", "time,cpu\n0,100\n60,lots\n",
			`load.csv:3: field cpu: "lots" is not a CPU amount: give the total over all pods in millicores (1500) or as a quantity (1500m)`},
		{"a cpu quantity with an unknown suffix", "load.csv", "time,cpu\n0,150x\n",
			`load.csv:2: field cpu: "150x" is not a CPU amount: give the total over all pods in millicores (1500) or as a quantity (1500m)`},
		{"a bare cpu number with a fraction is refused: Kubernetes would read cores, a load file reads millicores", "load.csv", "time,cpu\n0,1.5\n",
			`load.csv:2: field cpu: "1.5" would be a fraction of a millicore: a bare cpu number is millicores; give 1500m for 1.5 cores, or 1500`},
		{"a non-numeric memory value names its unit", "load.csv", "time,memory\n0,2GB\n",
			`load.csv:2: field memory: "2GB" is not a memory amount: give the total over all pods in bytes (268435456) or as a quantity (256Mi, 2Gi)`},
		{"a non-numeric custom value", "load.csv", "time,qps\n0,many\n",
			`load.csv:2: field qps: "many" is not a number: give the metric's total over all pods (60.5) or a quantity (500m, 2k)`},
		{"a negative quantity", "load.csv", "time,cpu\n0,-150m\n", `load.csv:2: field cpu: "-150m" is negative`},
		{"a quantity too large", "load.csv", "time,memory\n0,1Ei\n", `load.csv:2: field memory: "1Ei" is larger than 1e+15 bytes`},
		{"a yaml quantity with an unknown suffix", "load.yaml", "kind: Load\npoints:\n- {at: 0, memory: 2 Gi}\n",
			`load.yaml:3: field points[0].memory: "2 Gi" is not a memory amount: give the total over all pods in bytes (268435456) or as a quantity (256Mi, 2Gi)`},
		{"a gap in a row", "load.csv", "time,cpu,qps\n0,100,1\n60,,2\n", `load.csv:3: field cpu: no value (a gap): give every metric a value at every time`},
		{"a short row", "load.csv", "time,cpu,qps\n0,100,1\n60,2\n", `load.csv:3: wrong number of fields: every row needs a time and one value per metric of the header (a gap?)`},
		{"unsorted times", "load.csv", "time,cpu\n0,100\n120,5\n60,5\n", `load.csv:4: field time: time 1m0s comes after 2m0s (line 3): times must increase`},
		{"a duplicate time", "load.csv", "time,cpu\n0,100\n1m,5\n60,5\n", `load.csv:4: field time: time 1m0s appears twice (also on line 3)`},
		{"a start after 0", "load.csv", "time,cpu\n30,100\n", `load.csv:2: field time: the first point is at 30s: the demand must start at time 0 (a gap before it)`},
		{"an unknown column", "load.csv", "time,cpu,q p s\n0,1,2\n", `load.csv:1: field q p s: unknown column: "q p s" is not a metric name (cpu, memory, or a custom metric's name of letters, digits and _-.:/)`},
		{"no time column", "load.csv", "cpu,time\n0,1\n", `load.csv:1: field cpu: the first column must be "time"`},
		{"a bad time", "load.csv", "time,cpu\nsoon,1\n", `load.csv:2: field time: "soon" is neither a duration (90s, 1h30m) nor a number of seconds`},
		{"an empty file", "load.csv", "", `load.csv: empty: a CSV load needs a header (time,cpu,...) and rows`},
		{"a yaml gap", "load.yaml", "kind: Load\npoints:\n- {at: 0, cpu: 1, qps: 2}\n- {at: 60, cpu: 3}\n", `load.yaml:4: field points[1].qps: missing (a gap): the first point (line 3) gives qps, so every point must`},
		{"a yaml negative value", "load.yaml", "kind: Load\npoints:\n- at: 0\n  cpu: -1\n", `load.yaml:4: field points[0].cpu: "-1" is negative`},
		{"a yaml unknown field", "load.yaml", "kind: Load\nshape: wave\npoints: []\n", `load.yaml:2: field shape: unknown field (apiVersion, kind, interpolation, points)`},
		{"a yaml wrong kind", "load.yaml", "kind: Loads\npoints: []\n", `load.yaml:1: field kind: "Loads" is not Load`},
		{"a yaml bad interpolation", "load.yaml", "kind: Load\ninterpolation: cubic\npoints: []\n", `load.yaml:2: field interpolation: "cubic" is neither step nor linear`},
		{"a yaml unsorted time", "load.yaml", "kind: Load\npoints:\n- {at: 0, cpu: 1}\n- {at: 2m, cpu: 1}\n- {at: 1m, cpu: 1}\n", `load.yaml:5: field time: time 1m0s comes after 2m0s (line 4): times must increase`},
		{"yaml syntax", "load.yaml", "kind: Load\npoints: [\n", `load.yaml:2: not YAML: did not find expected node content`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.file, []byte(tc.data))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("error\n got %s\nwant %s", got, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestRequireNamesTheColumnNoMetricReads(t *testing.T) {
	c, err := Parse("load.csv", []byte("time,cpu,qps\n0,1,2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Require("load.csv", []string{"cpu", "qps"}); err != nil {
		t.Errorf("every column read: %v", err)
	}
	want := `load.csv:1: field qps: unknown metric: no metric of the HPA reads it (it reads cpu)`
	if err := c.Require("load.csv", []string{"cpu"}); err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	want = `load.csv:1: field memory: missing: the HPA reads this metric but the load gives no demand for it`
	if err := c.Require("load.csv", []string{"cpu", "qps", "memory"}); err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

// FuzzParse: any input either parses into a curve that keeps Curve's promises or fails with
// one line naming the file.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"time,cpu\n0,150\n60,800\n",
		"time,cpu,qps\n0,1,2\n1m,3,4\n",
		"kind: Load\ninterpolation: linear\npoints:\n- {at: 0, cpu: 1}\n- {at: 90s, cpu: 2}\n",
		"time,cpu\n0,\"1\"\n",
		"kind: Load\npoints: [{at: 0, cpu: .inf}]\n",
		"time,cpu,memory,qps\n0,150m,2Gi,500m\n1m,1.5,1Ei,2k\n",
	} {
		f.Add("load.csv", []byte(seed))
		f.Add("load.yaml", []byte(seed))
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		if strings.ContainsAny(name, "\n\r") {
			return
		}
		c, err := Parse(name, data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), name) || strings.ContainsAny(err.Error(), "\n") && !strings.ContainsAny(string(data), "\n") {
				t.Fatalf("error %q does not start with the file name on one line", err)
			}
			return
		}
		if len(c.Points) == 0 || c.Points[0].At != 0 || len(c.Metrics) == 0 {
			t.Fatalf("curve without a start at 0: %+v", c)
		}
		for i, p := range c.Points {
			if i > 0 && p.At <= c.Points[i-1].At {
				t.Fatalf("points not increasing at %d: %+v", i, c.Points)
			}
			for _, m := range c.Metrics {
				v, ok := p.Values[m]
				if !ok || v < 0 || v != v {
					t.Fatalf("point %d: metric %s value %v (present %v)", i, m, v, ok)
				}
			}
			if len(p.Values) != len(c.Metrics) {
				t.Fatalf("point %d has values %v for metrics %v", i, p.Values, c.Metrics)
			}
		}
		for _, at := range []time.Duration{0, c.End() / 2, c.End(), c.End() + time.Hour} {
			for _, m := range c.Metrics {
				if v := c.Value(m, at); v < 0 || v != v {
					t.Fatalf("Value(%s, %s) = %v", m, at, v)
				}
			}
		}
	})
}

package simulate

import (
	"math"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim/load"
)

// TestLoadQuantitiesReadAsKubernetesReadsThem: the load package parses quantities itself (it
// is a leaf for its fuzz target); a value with a suffix means what resource.ParseQuantity
// makes of it, cpu in cores (so millicores in the curve), memory and custom metrics as is.
func TestLoadQuantitiesReadAsKubernetesReadsThem(t *testing.T) {
	for _, q := range []string{"150m", "1500m", "0.5m", "2k", ".5k", "+3M", "1.25G", "0.007T", "0.000001P", "1Ki", "256Mi", "1.5Gi", "0.003Ti", "0.0001Pi", "0.0000001Ei", "0.0000001E", "0.001k"} {
		t.Run(q, func(t *testing.T) {
			c, err := load.Parse("load.csv", []byte("time,cpu,memory,qps\n0,"+q+","+q+","+q+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			kq := resource.MustParse(q)
			k := kq.AsApproximateFloat64()
			for metric, want := range map[string]float64{load.CPU: k * 1000, load.Memory: k, "qps": k} {
				if got := c.Value(metric, 0); math.Abs(got-want) > 1e-12*want {
					t.Errorf("%s %s = %g, Kubernetes reads %g", metric, q, got, want)
				}
			}
		})
	}
}

// TestHelpSaysTheLoadFormatWithAnExampleThatParses: simulate --help shows a load file, and
// that example is one: cpu 150m is 150 millicores in total, memory 2Gi is bytes.
func TestHelpSaysTheLoadFormatWithAnExampleThatParses(t *testing.T) {
	r := runSimulate(t, nil, "--help")
	for _, want := range []string{"  time,cpu,memory\n  0s,150m,512Mi\n  2m,1500m,2Gi\n", "cpu is in millicores", "memory in bytes or a quantity (256Mi, 2Gi)", "kind: Load", "rows such as 0s,150m"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("simulate --help lacks %q:\n%s", want, r.stdout)
		}
	}
	c, err := load.Parse("load.csv", []byte(loadExample))
	if err != nil {
		t.Fatalf("the help's example: %v", err)
	}
	if cpu, mem := c.Value(load.CPU, 2*time.Minute), c.Value(load.Memory, 2*time.Minute); cpu != 1500 || mem != 2<<30 {
		t.Errorf("the help's example at 2m: cpu %g millicores, memory %g bytes; want 1500 and %d", cpu, mem, 2<<30)
	}
}

package simulate

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/validation"
)

// runSimulate runs "kubectl hpa simulate ARGS" with ec as the cluster (nil: none reachable)
// and an 80-column chart.
func runSimulate(t *testing.T, ec *cmdutil.Clients, args ...string) result {
	t.Helper()
	var out, errOut cmdtest.SyncBuffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	configFlags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{Use: "kubectl-hpa", SilenceUsage: true, SilenceErrors: true}
	configFlags.AddFlags(root.PersistentFlags())
	o := NewOptions(configFlags, streams)
	o.termWidth = func(io.Writer) int { return 80 }
	if ec != nil {
		o.NewClients = func() (*cmdutil.Clients, error) {
			c := *ec
			c.Host = "https://127.0.0.1:1"
			return &c, nil
		}
	}
	root.AddCommand(newCmd(o))
	root.SetArgs(append([]string{"simulate", "--kubeconfig", cmdtest.Kubeconfig(t)}, args...))
	root.SetOut(&out)
	root.SetErr(&errOut)
	code := cmdutil.Report(&errOut, root.ExecuteContext(context.Background()))
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

// result is one command run.
type result struct {
	stdout, stderr string
	code           int
}

func td(name string) string { return filepath.Join("testdata", "simulate", name) }

// The file-only simulation of docs/simulate.md (the README shows an excerpt): the HPA as it is,
// a variant by flags and one by file.
var simulateGoldenArgs = []string{
	"-f", td("hpa.yaml"), "--requests", "cpu=200m", "--load", td("load.csv"),
	"--variant", "fast=cpu=60%,scaleUp.policies=Pods:8/15s,scaleDown.stabilizationWindowSeconds=60",
	"--variant-file", td("calm.yaml"),
}

func TestSimulateMatchesGolden(t *testing.T) {
	for _, tt := range []struct {
		golden string
		args   []string
	}{
		{"simulate.txt", nil},
		{"simulate.json", []string{"-o", "json", "--duration", "5m"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			r := runSimulate(t, nil, append(simulateGoldenArgs, tt.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			cmdtest.CheckGolden(t, tt.golden, r.stdout)
		})
	}
}

func TestSimulateReadsTheHPAAndWorkloadFromTheCluster(t *testing.T) {
	f := cmdtest.NewFixture()
	f.SetPods(4, "200m", "100m")
	ec, _ := f.Build()
	r := runSimulate(t, ec, "web", "-n", "shop", "--load", td("load.csv"), "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{`"kind": "Simulation"`, `"source": "cluster"`, `"replicas": 4`, `"cpu": "200m"`, `"uid": "hpa-uid"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %s", want)
		}
	}
	r = runSimulate(t, ec, "nosuch", "-n", "shop", "--load", td("load.csv"))
	if r.code != cmdutil.ExitHPANotFound || r.stdout != "" {
		t.Errorf("a missing HPA: exit %d, stdout %q; want %d and nothing printed", r.code, r.stdout, cmdutil.ExitHPANotFound)
	}
}

func TestSimulateWritesThePlotBeforePrinting(t *testing.T) {
	dir := t.TempDir()
	svg := filepath.Join(dir, "web.svg")
	r := runSimulate(t, nil, append(simulateGoldenArgs, "--plot", svg)...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if data, err := os.ReadFile(svg); err != nil || !strings.Contains(string(data), "<svg") {
		t.Errorf("the plot was not written as SVG: %v", err)
	}
	r = runSimulate(t, nil, append(simulateGoldenArgs, "--plot", filepath.Join(dir, "missing", "web.png"))...)
	if r.code == 0 || r.stdout != "" {
		t.Errorf("a plot that cannot be written: exit %d, stdout %d bytes; want a failure and nothing printed", r.code, len(r.stdout))
	}
}

// Bad input of every kind: exit 2, one line on stderr naming the flag or the file, line and
// field, and nothing on stdout (never a partial result).
func TestSimulateRefusesBadInputWithOneLine(t *testing.T) {
	base := []string{"-f", td("hpa.yaml"), "--requests", "cpu=200m", "--load", td("load.csv")}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"neither NAME nor -f", []string{"--load", td("load.csv")}, "an HPA NAME or -f FILE is required"},
		{"NAME and -f", append([]string{"web"}, base...), "give an HPA NAME or -f FILE, not both"},
		{"no --load", []string{"-f", td("hpa.yaml"), "--requests", "cpu=200m"}, "--load FILE is required"},
		{"a load with a negative value", []string{"-f", td("hpa.yaml"), "--requests", "cpu=200m", "--load", td("bad-load.csv")}, "bad-load.csv:3: field cpu"},
		{"a missing load file", []string{"-f", td("hpa.yaml"), "--requests", "cpu=200m", "--load", td("nosuch.csv")}, "--load: open"},
		{"-f without requests", []string{"-f", td("hpa.yaml"), "--load", td("load.csv")}, "-f needs the workload's pod requests"},
		{"--requests with a NAME", []string{"web", "--requests", "cpu=1", "--load", td("load.csv")}, "apply with -f"},
		{"a workload of the wrong kind", append(base[:2:2], "--workload", td("hpa.yaml"), "--load", td("load.csv")), `kind "HorizontalPodAutoscaler": want a Deployment`},
		{"an invalid HPA file names its line", []string{"-f", td("bad-period.yaml"), "--requests", "cpu=200m", "--load", td("load.csv")},
			"bad-period.yaml:16: the API server would refuse it: spec.behavior.scaleUp.policies[0].periodSeconds"},
		{"a misspelt field names its line", append(base, "--variant-file", td("misspelt.yaml")), `misspelt.yaml:11: unknown field "spec.behaviour"`},
		{"an autoscaling/v1 HPA says which version simulate reads", []string{"-f", td("hpa-v1.yaml"), "--requests", "cpu=200m", "--load", td("load.csv")},
			"hpa-v1.yaml:2: apiVersion autoscaling/v1: simulate reads autoscaling/v2 HorizontalPodAutoscalers (the API server serves every HPA as autoscaling/v2; write this one so)"},
		{"a variant with an unknown key lists the known ones", append(base, "--variant", "x=scaleup.policies=Pods:4/15s"),
			`--variant x=scaleup.policies=Pods:4/15s: unknown key "scaleup.policies": known keys are min, max, tolerance, scaleUp.stabilizationWindowSeconds`},
		{"a variant naming a metric index out of range says so", append(base, "--variant", "x=3=60%"),
			"--variant x=3=60%: metric index 3 is out of range: the HPA has 1 metric(s)"},
		{"a variant naming a metric two metrics share says how to pick one", []string{"-f", td("hpa-two-containers.yaml"), "--requests", "cpu=200m", "--load", td("load.csv"), "--variant", "x=cpu=60%"},
			`--variant x=cpu=60%: metric "cpu" is ambiguous (cpu/app, cpu/proxy): name it by index (0=cpu/app, 1=cpu/proxy)`},
		{"a variant the API server would refuse", append(base, "--variant", "x=scaleUp.policies=Pods:4/31m"),
			"--variant x: the API server would refuse it: spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 1860"},
		{"a variant with an unknown select policy", append(base, "--variant", "x=scaleDown.selectPolicy=Fastest"),
			`spec.behavior.scaleDown.selectPolicy: Unsupported value: "Fastest"`},
		{"a variant with max below min", append(base, "--variant", "x=max=1"), "spec.maxReplicas: Invalid value: 1"},
		{"a policy that does not parse", append(base, "--variant", "x=scaleUp.policies=Pods8"), `--variant x=scaleUp.policies=Pods8: policy "Pods8": want TYPE:VALUE/PERIOD`},
		{"a bare number for cpu echoes the flag as typed", append(base, "--variant", "x=cpu=90"), "--variant x=cpu=90: a number without a unit would mean 90 cores"},
		{"a target that does not parse echoes the flag as typed", append(base, "--variant", "x=cpu=lots"), `--variant x=cpu=lots: "lots" is neither a percentage nor a quantity`},
		{"a variant without overrides", append(base, "--variant", "x"), "want NAME=KEY=VALUE"},
		{"two variants of one name", append(base, "--variant", "x=max=5", "--variant", "x=max=6"), `variant name "x" is taken`},
		{"a variant named as the HPA as it is", append(base, "--variant", "current=max=5"), `variant name "current" is taken by the HPA as it is`},
		{"a plot of an unknown format", append(base, "--plot", "web.pdf"), "--plot web.pdf: the chart is drawn as SVG or PNG"},
		{"a model that cannot run", append(base, "--sync-period", "0s"), "sync period 0s is not positive"},
		{"-n against the file's namespace", append(base, "-n", "other"), `the HPA's namespace "shop" does not match -n other`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runSimulate(t, nil, tt.args...)
			if r.code != cmdutil.ExitUsage {
				t.Errorf("exit %d, want %d; stderr: %s", r.code, cmdutil.ExitUsage, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr %q does not contain %q", r.stderr, tt.want)
			}
			if lines := strings.Count(strings.TrimSpace(r.stderr), "\n") + 1; lines != 1 {
				t.Errorf("stderr has %d lines, want 1: %q", lines, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("printed %q before failing", r.stdout)
			}
		})
	}
}

func TestVariantOverridesSetTheirFields(t *testing.T) {
	hpa, err := readHPAFile(td("hpa.yaml"), "shop", validation.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	v, err := parseVariant(hpa, "v=min=3,max=30,tolerance=0.05,scaleUp.selectPolicy=Min,scaleUp.policies=Pods:8/15s;Percent:200/1m,scaleDown.stabilizationWindowSeconds=2m,scaleDown.tolerance=0.2,cpu=60%", validation.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	s := v.hpa.Spec
	up, down := s.Behavior.ScaleUp, s.Behavior.ScaleDown
	switch {
	case *s.MinReplicas != 3 || s.MaxReplicas != 30:
		t.Errorf("min/max %d/%d, want 3/30", *s.MinReplicas, s.MaxReplicas)
	case up.Tolerance.String() != "50m" || down.Tolerance.String() != "200m":
		t.Errorf("tolerances up %s down %s, want 50m and 200m (the later key wins)", up.Tolerance, down.Tolerance)
	case *up.SelectPolicy != "Min" || len(up.Policies) != 2 || up.Policies[1].PeriodSeconds != 60 || up.Policies[1].Value != 200:
		t.Errorf("scaleUp %+v", up)
	case *down.StabilizationWindowSeconds != 120:
		t.Errorf("scaleDown window %d, want 120", *down.StabilizationWindowSeconds)
	case *s.Metrics[0].Resource.Target.AverageUtilization != 60:
		t.Errorf("cpu target %d, want 60", *s.Metrics[0].Resource.Target.AverageUtilization)
	}
	if hpa.Spec.Behavior != nil || *hpa.Spec.MinReplicas != 2 {
		t.Error("the variant changed the HPA it was made from")
	}
}

// -o yaml leads as kubectl's does: apiVersion, kind, metadata (not the keys sorted).
func TestSimulateYAMLLeadsWithAPIVersionKindAndMetadata(t *testing.T) {
	r := runSimulate(t, nil, append(simulateGoldenArgs, "-o", "yaml", "--duration", "5m")...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lead := strings.SplitN(r.stdout, "\n", 4)[:3]
	if diff := cmp.Diff([]string{"apiVersion: hpa.kubectl-hpa.io/v1alpha1", "kind: Simulation", "metadata:"}, lead); diff != "" {
		t.Errorf("-o yaml starts (-want +got):\n%s", diff)
	}
}

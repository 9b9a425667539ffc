package tune

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/simulate"
)

type result struct {
	stdout, stderr string
	code           int
}

// runTune runs "kubectl hpa tune ARGS" with no cluster and an 80-column chart.
func runTune(t *testing.T, args ...string) result {
	t.Helper()
	return runTuneOn(t, nil, args...)
}

// runTuneOn runs "kubectl hpa tune ARGS" with ec as the cluster (nil: none reachable) and an
// 80-column chart.
func runTuneOn(t *testing.T, ec *cmdutil.Clients, args ...string) result {
	t.Helper()
	var out, errOut cmdtest.SyncBuffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	configFlags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{Use: "kubectl-hpa", SilenceUsage: true, SilenceErrors: true}
	configFlags.AddFlags(root.PersistentFlags())
	o := NewOptions(configFlags, streams)
	o.termWidth = func(io.Writer) int { return 80 }
	if ec != nil {
		o.Input.NewClients = func() (*cmdutil.Clients, error) {
			c := *ec
			c.Host = "https://127.0.0.1:1"
			return &c, nil
		}
	}
	root.AddCommand(newCmd(o))
	root.SetArgs(append([]string{"tune", "--kubeconfig", cmdtest.Kubeconfig(t)}, args...))
	root.SetOut(&out)
	root.SetErr(&errOut)
	code := cmdutil.Report(&errOut, root.ExecuteContext(context.Background()))
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

func td(name string) string { return filepath.Join("testdata", name) }

// The run of docs/tune.md: the HPA of simulate's examples under a spike train.
var goldenArgs = []string{"-f", td("hpa.yaml"), "--requests", "cpu=200m", "--load", td("spikes.csv"), "--candidates", "60"}

func TestTuneMatchesGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"tune-cost.txt", []string{"--objective", "cost", "--max-above-target", "5%"}},
		{"tune-unmet.txt", []string{"--objective", "cost", "--max-above-target", "0", "--keep", "scaleUp,targets,max"}},
		{"tune.json", []string{"--objective", "cost", "--max-above-target", "5%", "-o", "json"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			r := runTune(t, append(goldenArgs, tc.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			cmdtest.CheckGolden(t, tc.golden, r.stdout)
		})
	}
}

func TestTuneRefusesBadInputWithOneLine(t *testing.T) {
	file := []string{"-f", td("hpa.yaml"), "--requests", "cpu=200m", "--load", td("spikes.csv")}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no load", []string{"-f", td("hpa.yaml"), "--requests", "cpu=200m"}, "--load FILE is required"},
		{"no HPA", []string{"--load", td("spikes.csv")}, "kubectl hpa tune NAME [-n NAMESPACE] --load FILE"},
		{"an unknown objective", append(file, "--objective", "cheap"), `--objective "cheap": want cost, risk or balanced`},
		{"a share that is not one", append(file, "--max-above-target", "lots"), `--max-above-target "lots": want a percentage`},
		{"a share over the period", append(file, "--max-above-target", "120%"), "more than the whole period"},
		{"a field --keep does not know", append(file, "--keep", "minimum"), "--keep minimum: no such field"},
		{"--keep holding every field", append(file, "--keep", "targets,min,max,scaleUp,scaleDown"), "nothing is left to tune"},
		{"--keep naming a field twice", append(file, "--keep", "min,max,min"), "--keep min: given twice"},
		{"--keep naming a field twice, apart", append(file, "--keep", "min", "--keep", "min"), "--keep min: given twice"},
		{"--keep with an empty name", append(file, "--keep", "min,"), "--keep: an empty field name (a stray comma?)"},
		{"--keep naming a field a group it names holds", append(file, "--keep", "scaleUp,scaleUp.tolerance"), "--keep scaleUp.tolerance: scaleUp holds it already: give one of the two"},
		{"--keep naming a group after a field it holds", append(file, "--keep", "scaleDown.policies,scaleDown"), "--keep scaleDown.policies: scaleDown holds it already: give one of the two"},
		{"--keep naming the only metric and the targets", append(file, "--keep", "targets,cpu"), "--keep cpu: targets holds it already: give one of the two"},
		{"--keep naming tolerance and a direction's", append(file, "--keep", "tolerance,scaleDown.tolerance"), "--keep scaleDown.tolerance: tolerance holds it already: give one of the two"},
		{"one candidate", append(file, "--candidates", "1"), "--candidates must be at least 2"},
		{"--apply with -f", append(file, "--apply"), "--apply patches the HPA read from the cluster: give an HPA NAME, not -f"},
		{"--apply with --from-recording", []string{"--from-recording", filepath.Join("..", "simulate", "testdata", "simulate", "run.jsonl"), "--apply"}, "--apply patches the HPA read from the cluster: --from-recording tunes the HPA as recorded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runTune(t, tc.args...)
			if r.code != cmdutil.ExitUsage {
				t.Errorf("exit %d, want %d (usage)", r.code, cmdutil.ExitUsage)
			}
			if lines := strings.Count(strings.TrimSpace(r.stderr), "\n") + 1; !strings.Contains(r.stderr, tc.want) || lines != 1 {
				t.Errorf("stderr %q: want one line containing %q", r.stderr, tc.want)
			}
			if r.stdout != "" {
				t.Errorf("printed %q before failing", r.stdout)
			}
		})
	}
}

func TestSimulatePlayingTheRecommendationReproducesTunesFigures(t *testing.T) {
	r := runTune(t, append(goldenArgs, "--objective", "cost", "--max-above-target", "5%")...)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	_, rest, ok := strings.Cut(r.stdout, "--variant '")
	variant, _, ok2 := strings.Cut(rest, "'")
	if !ok || !ok2 {
		t.Fatalf("no --variant '...' in tune's output:\n%s", r.stdout)
	}
	var tuned []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "tuned" && len(tuned) == 0 {
			tuned = f
		}
	}
	if tuned == nil {
		t.Fatalf("no tuned row in tune's output:\n%s", r.stdout)
	}

	var out, errOut cmdtest.SyncBuffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	configFlags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{Use: "kubectl-hpa", SilenceUsage: true, SilenceErrors: true}
	configFlags.AddFlags(root.PersistentFlags())
	root.AddCommand(simulate.NewCmdSimulate(configFlags, streams))
	root.SetArgs(append([]string{"simulate", "--kubeconfig", cmdtest.Kubeconfig(t), "-o", "json", "--variant", variant}, goldenArgs[:6]...))
	if code := cmdutil.Report(&errOut, root.ExecuteContext(context.Background())); code != 0 {
		t.Fatalf("simulate --variant %s: exit %d: %s", variant, code, errOut.String())
	}
	var s v1alpha1.Simulation
	if err := json.Unmarshal([]byte(out.String()), &s); err != nil {
		t.Fatal(err)
	}
	// simulate measures a variant's time above target against its own targets, tune against
	// the current spec's: the two agree on it only when the target is unchanged.
	sm := s.Variants[1].Summary
	got := []string{fmt.Sprintf("%.2f", sm.PodSeconds/3600), fmt.Sprint(sm.PeakReplicas)}
	want := []string{tuned[1], tuned[len(tuned)-1]}
	if !strings.Contains(variant, "cpu=") {
		got = append(got, dur(time.Duration(sm.SecondsAboveTarget*float64(time.Second))))
		want = append(want, tuned[2])
	}
	if !slices.Equal(got, want) {
		t.Errorf("simulate --variant %s gives pod-hours, above target, peak %v; tune printed %v (row %q)", variant, got, want, strings.Join(tuned, " "))
	}
}

// The shape of the run on the real test cluster: tune on under three minutes, asked for at
// most 5% of the period above target, recommends a spec 13.94% above target; the period is
// also shorter than the default scale-down window. Neither the text nor the Tuning may
// present it as meeting the objective, nor its patch as one to apply; a spec that meets the
// constraints on a load that supports it is said to be one.
func TestTuneSaysWhenItsRecommendationIsNotOneToApply(t *testing.T) {
	short := []string{"-f", td("hpa.yaml"), "--requests", "cpu=100m", "--replicas", "2", "--load", td("short.csv"),
		"--objective", "cost", "--max-above-target", "5%", "--candidates", "60", "--keep", "targets"}
	const (
		unmet       = "no spec played with targets kept meets the constraints (at most 5% of the period above target, no limit on rescales): the recommendation is the closest, not a safe spec"
		unsupported = "the load cannot support the recommendation: its period (2m45s) is shorter than the longest window or policy period of the specs compared (5m0s)"
	)
	for _, tc := range []struct {
		name string
		args []string
		// wantText are lines (trimmed) the text report holds.
		wantText []string
		// wantNot are why the Tuning says the recommendation is not applicable (none: it is).
		wantNot []string
	}{
		{
			name: "13.94% above target where 5% was asked, on 2m45s: unmet and unsupported, both said",
			args: short,
			wantText: []string{
				"NO spec played with targets kept meets the constraints (at most 5% of the period above target, no limit on rescales): this is the closest, not a safe spec. Without --keep targets tune searches those fields too.",
				"Nor can the load support it: its period (2m45s) is shorter than the longest window or policy period of the specs compared (5m0s).",
				"Patch of the closest spec, not one to apply (a JSON merge patch; nothing was written):",
			},
			wantNot: []string{unmet, unsupported},
		},
		{
			name: "the constraints met on 2m45s: unsupported only",
			args: append(slices.Clone(short), "--max-above-target", "none"),
			wantText: []string{
				"It meets the constraints on this load, but the load cannot support it: its period (2m45s) is shorter than the longest window or policy period of the specs compared (5m0s).",
				"Patch of a spec the load cannot support, not one to apply (a JSON merge patch; nothing was written):",
			},
			wantNot: []string{"the load cannot support the recommendation: its period (2m45s) is shorter than the longest window or policy period of the specs compared (5m0s)"},
		},
		{
			name: "no spec meets the constraints with min and max kept: the kept fields are named with the way to search them",
			args: append(slices.Clone(goldenArgs), "--objective", "cost", "--max-above-target", "0", "--keep", "min,max"),
			wantText: []string{
				"NO spec played with min, max kept meets the constraints (at most 0% of the period above target, no limit on rescales): this is the closest, not a safe spec. Without --keep min,max tune searches those fields too.",
			},
			wantNot: []string{"no spec played with min, max kept meets the constraints (at most 0% of the period above target, no limit on rescales): the recommendation is the closest, not a safe spec"},
		},
		{
			name: "the constraints met on half an hour: applicable",
			args: append(slices.Clone(goldenArgs), "--objective", "cost", "--max-above-target", "5%"),
			wantText: []string{
				"It meets the constraints (at most 5% of the period above target, no limit on rescales) on this load.",
				"Patch (a JSON merge patch; nothing was written):",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runTune(t, tc.args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			lines := map[string]bool{}
			for _, l := range strings.Split(r.stdout, "\n") {
				lines[strings.TrimSpace(l)] = true
			}
			for _, want := range tc.wantText {
				if !lines[want] {
					t.Errorf("no line %q in:\n%s", want, r.stdout)
				}
			}
			j := runTune(t, append(slices.Clone(tc.args), "-o", "json")...)
			if j.code != 0 {
				t.Fatalf("-o json: exit %d: %s", j.code, j.stderr)
			}
			var got struct {
				Applicable    *bool    `json:"applicable"`
				NotApplicable []string `json:"notApplicable"`
			}
			if err := json.Unmarshal([]byte(j.stdout), &got); err != nil {
				t.Fatal(err)
			}
			if got.Applicable == nil || *got.Applicable != (len(tc.wantNot) == 0) || !slices.Equal(got.NotApplicable, tc.wantNot) {
				t.Errorf("Tuning: applicable %v, notApplicable %q; want %v, %q", ptr.Deref(got.Applicable, false), got.NotApplicable, len(tc.wantNot) == 0, tc.wantNot)
			}
		})
	}
}

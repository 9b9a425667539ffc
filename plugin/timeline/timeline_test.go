package timeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

// testdata/run.jsonl is plugin/simulate's recording of the real controller (informers on a
// fake clientset) through a rising load, a metrics outage and a falling load: 17 syncs of
// shop/web.
const recorded = "testdata/run.jsonl"

type result struct {
	stdout, stderr string
	code           int
}

// runTimeline runs kubectl hpa timeline with args over the clients ec (nil: none may be
// built), at cmdtest.Now.
func runTimeline(t *testing.T, ec *cmdutil.Clients, args ...string) result {
	t.Helper()
	var out, errOut cmdtest.SyncBuffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	configFlags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{Use: "kubectl-hpa", SilenceUsage: true, SilenceErrors: true}
	configFlags.AddFlags(root.PersistentFlags())
	o := NewOptions(configFlags, streams)
	o.termWidth = func(io.Writer) int { return 80 }
	o.Clock = clocktesting.NewFakePassiveClock(cmdtest.Now)
	o.newClients = func(*Options) (*cmdutil.Clients, error) {
		if ec == nil {
			t.Fatal("the command built cluster clients, where it needs none")
		}
		c := *ec
		c.Host = "https://127.0.0.1:1"
		return &c, nil
	}
	root.AddCommand(newCmd(o))
	root.SetArgs(append([]string{"timeline", "--kubeconfig", cmdtest.Kubeconfig(t)}, args...))
	root.SetOut(&out)
	root.SetErr(&errOut)
	code := cmdutil.Report(&errOut, root.ExecuteContext(context.Background()))
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

func TestTimelineOfARecordingMatchesGolden(t *testing.T) {
	r := runTimeline(t, nil, "web", "-n", "shop", "--record", recorded)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	cmdtest.CheckGolden(t, "timeline-recording.txt", r.stdout)
}

// -o json is the Timeline kind of plugin/api/v1alpha1, whose test decodes this golden strictly.
func TestTimelineOfARecordingAsJSONMatchesGolden(t *testing.T) {
	r := runTimeline(t, nil, "web", "-n", "shop", "--record", recorded, "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	cmdtest.CheckGolden(t, "timeline-recording.json", r.stdout)
}

// The recording's every sync, as recorded: its rescales at the syncs run made them, with the
// constraint re-decided, and what the period shows.
func TestTimelineOfARecordingHoldsEverySyncAsRunMadeIt(t *testing.T) {
	r := runTimeline(t, nil, "web", "--record", recorded, "--all-syncs", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var tl v1alpha1.Timeline
	if err := json.Unmarshal([]byte(r.stdout), &tl); err != nil {
		t.Fatal(err)
	}
	if tl.APIVersion != "hpa.kubectl-hpa.io/v1alpha1" || tl.Kind != "Timeline" || tl.Metadata.Namespace != "shop" {
		t.Errorf("apiVersion %q, kind %q, namespace %q; want hpa.kubectl-hpa.io/v1alpha1 Timeline of shop (the recording's only web)", tl.APIVersion, tl.Kind, tl.Metadata.Namespace)
	}
	if len(tl.Syncs) != 17 || tl.SyncsKnown != 17 || tl.ChangesOnly || !tl.Source.Exact || tl.Source.Kind != v1alpha1.TimelineRecording {
		t.Errorf("%d syncs of %d known (changes only %v), source %+v; want all 17, exact, from the recording", len(tl.Syncs), tl.SyncsKnown, tl.ChangesOnly, tl.Source)
	}
	var got []string
	for _, rs := range tl.Rescales {
		got = append(got, rs.Time.UTC().Format("15:04:05")+" "+rs.Direction+" "+rs.Constraint)
	}
	want := "19:00:15 up ScaleUpLimit, 19:01:15 up ScaleUpLimit, 19:02:45 down None"
	if strings.Join(got, ", ") != want {
		t.Errorf("rescales %q, want %q", strings.Join(got, ", "), want)
	}
	found := map[string]bool{}
	for _, f := range tl.Findings {
		found[f.Type] = f.Found
	}
	// The outage (2 syncs, 30s) is blind; the load above target from 19:00:15 to the outage
	// and at 19:02:00 (1m30s); the scale-down 1m30s after the last scale-up is a reversal.
	if !found[v1alpha1.FindingBlind] || !found[v1alpha1.FindingAboveTarget] || !found[v1alpha1.FindingFlapping] || found[v1alpha1.FindingCappedAtMax] {
		t.Errorf("findings %v, want blind, above target and flapping, not capped", found)
	}
}

// A recording whose last line was cut (run killed while writing it) gives the syncs before
// it, and the source's notes name the line left out.
func TestTimelineOfARecordingCutShortNotesTheLineLeftOut(t *testing.T) {
	data, err := os.ReadFile(recorded)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.jsonl")
	if err := os.WriteFile(cut, data[:len(data)-100], 0o600); err != nil {
		t.Fatal(err)
	}
	r := runTimeline(t, nil, "web", "-n", "shop", "--record", cut, "--all-syncs", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var tl v1alpha1.Timeline
	if err := json.Unmarshal([]byte(r.stdout), &tl); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Count(data, []byte("\n"))
	want := fmt.Sprintf("line %d, the last, was cut short (run was stopped while writing it) and is left out", lines)
	if len(tl.Syncs) != 16 || !slices.Contains(tl.Source.Notes, want) {
		t.Errorf("%d syncs, notes %q; want 16, and the note %q", len(tl.Syncs), tl.Source.Notes, want)
	}
}

func TestTimelineOfARecordingPeriodEndsAtItsLastSync(t *testing.T) {
	r := runTimeline(t, nil, "web", "-n", "shop", "--record", recorded, "--since", "1m", "--all-syncs", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var tl v1alpha1.Timeline
	if err := json.Unmarshal([]byte(r.stdout), &tl); err != nil {
		t.Fatal(err)
	}
	// 19:03:00 to 19:04:00: five syncs.
	if len(tl.Syncs) != 5 || tl.From.UTC().Format("15:04:05") != "19:03:00" || tl.To.UTC().Format("15:04:05") != "19:04:00" {
		t.Errorf("%d syncs from %s to %s, want 5 from 19:03:00 to 19:04:00", len(tl.Syncs), tl.From.UTC(), tl.To.UTC())
	}
}

func TestTimelineDrawsItsPlot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "web.svg")
	r := runTimeline(t, nil, "web", "-n", "shop", "--record", recorded, "--plot", path, "-o", "yaml")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "apiVersion: hpa.kubectl-hpa.io/v1alpha1\nkind: Timeline\n") {
		t.Errorf("-o yaml does not start with apiVersion and kind:\n%.200s", r.stdout)
	}
	svg, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(svg), "<svg") || !strings.Contains(string(svg), "replicas") {
		t.Errorf("%s is not an SVG chart of the replicas: %.200s", path, svg)
	}
}

func TestTimelineRefusesBadInputWithAnActionableLine(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"a --since that is not a duration", []string{"web", "--since", "6 hours"}, cmdutil.ExitUsage, `invalid argument "6 hours" for "--since"`},
		{"a negative --since", []string{"web", "--since", "-1h"}, cmdutil.ExitUsage, "--since must be positive, e.g. 6h or 30m, got -1h0m0s"},
		{"a --record and a --prometheus-url", []string{"web", "--record", recorded, "--prometheus-url", "http://127.0.0.1:9090"}, cmdutil.ExitUsage, "--record and --prometheus-url both give the past: give one"},
		{"a --sync-period without Prometheus", []string{"web", "--record", recorded, "--sync-period", "30s"}, cmdutil.ExitUsage, "--sync-period applies with --prometheus-url"},
		{"a plot that is no image", []string{"web", "--record", recorded, "--plot", "web.pdf"}, cmdutil.ExitUsage, "name the file .svg or .png"},
		{"a recording that does not exist", []string{"web", "--record", "testdata/none.jsonl"}, cmdutil.ExitUsage, "--record: opening the recording"},
		{"an HPA the recording does not hold", []string{"api", "-n", "shop", "--record", recorded}, cmdutil.ExitUsage, "holds no sync of shop/api: it holds shop/web"},
		{"no HPA name", nil, cmdutil.ExitUsage, "an HPA NAME is required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runTimeline(t, nil, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit %d and one line with %q", r.code, r.stderr, tc.code, tc.want)
			}
		})
	}
}

// From events: the rescales of the last 6h, each from the size the previous one set, the
// size at the start from the last one before the period, and the status now.
func TestTimelineFromEventsIsTheRescalesAndSaysItIsCoarse(t *testing.T) {
	f := cmdtest.NewFixture()
	f.RescaleEvent(3, 7*time.Hour)
	f.RescaleEvent(6, 2*time.Hour)
	f.RescaleEvent(4, 90*time.Minute)
	f.Events[2].Message = "New size: 4; reason: All metrics below target"
	f.HPA.Status.LastScaleTime = &metav1.Time{Time: cmdtest.Now.Add(-90 * time.Minute)}
	ec, _ := f.Build()
	r := runTimeline(t, ec, "web", "-n", "shop")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	cmdtest.CheckGolden(t, "timeline-events.txt", r.stdout)
}

// resizeEvent is the Deployment controller's event of its resize of web's ReplicaSet from to
// size, ago ago.
func resizeEvent(from, to int32, ago time.Duration) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web.resize.%d", to), Namespace: "shop"},
		InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Name: "web", Namespace: "shop"},
		Type:           corev1.EventTypeNormal, Reason: "ScalingReplicaSet", Count: 1,
		Message:        fmt.Sprintf("Scaled up replica set web-5d8f7c from %d to %d", from, to),
		FirstTimestamp: metav1.NewTime(cmdtest.Now.Add(-ago)), LastTimestamp: metav1.NewTime(cmdtest.Now.Add(-ago))}
}

// From events, the size a rescale came from is the evidence's, else said to be unknown: the
// first rescale of the events has no rescale before it, and the target had replicas then.
func TestTimelineFromEventsTakesARescalesOldSizeFromTheEvidenceOrSaysItIsUnknown(t *testing.T) {
	tests := []struct {
		name   string
		golden string
		// resize is the Deployment's event of the rescale, nil for none.
		resize *corev1.Event
		// sync and rescale are the rescale's rows in Syncs and Rescales, the spaces collapsed.
		sync, rescale string
	}{
		{name: "the Deployment's resize of its ReplicaSet at the rescale says the old size", golden: "timeline-events-resized",
			resize: resizeEvent(2, 6, 2*time.Hour-time.Second),
			sync:   "10:00:00 2 - - 6 - 2 -> 6", rescale: "10:00:00 up 2 6 cpu resource utilization (percentage of request) above target"},
		{name: "a resize to another size is not the rescale's", golden: "timeline-events-unknown-from",
			resize: resizeEvent(2, 5, 2*time.Hour),
			sync:   "10:00:00 ? - - 6 - ? -> 6", rescale: "10:00:00 up ? 6 cpu resource utilization (percentage of request) above target"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := cmdtest.NewFixture()
			f.RescaleEvent(6, 2*time.Hour)
			f.Events = append(f.Events, tc.resize)
			f.HPA.Status.LastScaleTime = &metav1.Time{Time: cmdtest.Now.Add(-2 * time.Hour)}
			ec, _ := f.Build()
			r := runTimeline(t, ec, "web", "-n", "shop")
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			rows := map[string]bool{}
			for _, l := range strings.Split(r.stdout, "\n") {
				rows[strings.Join(strings.Fields(l), " ")] = true
			}
			for _, want := range []string{tc.sync, tc.rescale} {
				if !rows[want] {
					t.Errorf("no row %q in:\n%s", want, r.stdout)
				}
			}
			cmdtest.CheckGolden(t, tc.golden+".txt", r.stdout)
		})
	}
}

func TestTimelineWithNothingKnownSaysWhichSourceToGive(t *testing.T) {
	f := cmdtest.NewFixture()
	ec, _ := f.Build()
	r := runTimeline(t, ec, "web", "-n", "shop", "--since", "2h")
	want := `error: nothing is known of horizontalpodautoscaler shop/web's last 2h0m0s: no SuccessfulRescale event (the API server keeps them an hour by default) and no status.lastScaleTime before the period; give --prometheus-url to replay its metrics, or --record FILE from kubectl hpa run --record` + "\n"
	if r.code != cmdutil.ExitFailure || r.stderr != want {
		t.Errorf("exit %d, stderr %q; want exit 1 and %q", r.code, r.stderr, want)
	}
}

func TestTimelineOfAMissingHPAExitsHPANotFound(t *testing.T) {
	f := cmdtest.NewFixture()
	ec, _ := f.Build()
	r := runTimeline(t, ec, "api", "-n", "shop")
	if r.code != cmdutil.ExitHPANotFound || !strings.Contains(r.stderr, `horizontalpodautoscaler "api" not found in namespace "shop"`) {
		t.Errorf("exit %d, stderr %q; want exit 3 naming the HPA", r.code, r.stderr)
	}
}

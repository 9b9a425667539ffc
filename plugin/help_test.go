package plugin

import (
	"bytes"
	goflag "flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
)

// commands are the command lines whose --help has a golden file, testdata/help-NAME.golden.
var commands = map[string][]string{
	"root":       nil,
	"explain":    {"explain"},
	"simulate":   {"simulate"},
	"tune":       {"tune"},
	"run":        {"run"},
	"version":    {"version"},
	"completion": {"completion"},
	"options":    {"options"},
	"rbac":       {"rbac"},
	"lint":       {"lint"},
	"list":       {"list"},
	"timeline":   {"timeline"},
	"top":        {"top"},
}

// optionsLine ends the help of every command: the global flags are listed once, by
// kubectl hpa options, as kubectl lists its own with kubectl options.
const optionsLine = `Use "kubectl hpa options" for a list of global command-line options (applies to all commands).`

func TestHelpOfEveryCommandMatchesItsGoldenFile(t *testing.T) {
	for name, args := range commands {
		t.Run(name, func(t *testing.T) {
			r := runHelp(t, append(args, "--help")...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			cmdtest.CheckGolden(t, "help-"+name, r.stdout)
		})
	}
}

func TestHelpListsTheGlobalFlagsOnlyUnderOptions(t *testing.T) {
	global := []string{"--kubeconfig", "--context", "--namespace", "--server", "--token", "--request-timeout", "--vmodule"}
	for name, args := range commands {
		t.Run(name, func(t *testing.T) {
			help := runHelp(t, append(args, "--help")...).stdout
			if name == "options" {
				for _, f := range global {
					if !strings.Contains(help, f) {
						t.Errorf("kubectl hpa options does not list %s:\n%s", f, help)
					}
				}
				if opts := runHelp(t, "options").stdout; opts != help {
					t.Errorf("kubectl hpa options and its --help differ:\n%s", cmp.Diff(help, opts))
				}
				return
			}
			for _, f := range global {
				if strings.Contains(help, f+"=") || strings.Contains(help, f+" ") {
					t.Errorf("help lists the global flag %s, which kubectl hpa options lists:\n%s", f, help)
				}
			}
			if !strings.HasSuffix(strings.TrimSpace(help), optionsLine) {
				t.Errorf("help does not end with %q:\n%s", optionsLine, help)
			}
		})
	}
}

// A flag several commands share says what it does in the command whose help shows it, with
// the default that command uses.
func TestSharedFlagsDescribeWhatTheyDoInEachCommand(t *testing.T) {
	tests := []struct {
		name        string
		command     string
		flag        string
		wantDefault string
		want        []string
		notWant     []string
	}{
		{"explain replays the controller's history from Prometheus", "explain", "prometheus-url", "", []string{"Replay", "stabilization window"}, []string{"--from-prometheus"}},
		{"simulate takes its load from Prometheus", "simulate", "prometheus-url", "", []string{"--from-prometheus", "load"}, []string{"stabilization window", "recommendations"}},
		{"explain's Prometheus timeout is 10s", "explain", "prometheus-timeout", "10s", nil, nil},
		{"simulate's Prometheus timeout is 10s", "simulate", "prometheus-timeout", "10s", nil, nil},
		{"explain's rate window defaults to the live samples' window", "explain", "prometheus-rate-window", "0s", []string{"live samples"}, nil},
		{"simulate's rate window is 1m", "simulate", "prometheus-rate-window", "1m0s", []string{"--since"}, []string{"live samples"}},
		{"explain's queries replay custom metrics", "explain", "prometheus-query", "", []string{"replay"}, nil},
		{"simulate's queries give a custom metric's load", "simulate", "prometheus-query", "", []string{"load"}, []string{"one series per pod"}},
		{"explain's sync period paces --watch and the replay", "explain", "sync-period", "15s", []string{"--watch", "--prometheus-url"}, nil},
		{"simulate's sync period is the model's", "simulate", "sync-period", "15s", []string{"Model"}, []string{"re-decide"}},
		{"run's sync period paces its loop", "run", "sync-period", "15s", []string{"reconcile"}, []string{"re-decide"}},
		{"explain's tolerance is the cluster's", "explain", "tolerance", "0.1", []string{"cluster"}, nil},
		{"simulate's tolerance is the model's", "simulate", "tolerance", "0.1", []string{"Model"}, nil},
		{"run's tolerance is the one its loop applies", "run", "tolerance", "0.1", []string{"loop"}, []string{"Cluster tolerance"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, _, err := NewRootCmd(genericiooptions.NewTestIOStreamsDiscard()).Find([]string{tt.command})
			if err != nil {
				t.Fatal(err)
			}
			f := cmd.Flags().Lookup(tt.flag)
			if f == nil {
				t.Fatalf("%s has no --%s", tt.command, tt.flag)
			}
			if tt.wantDefault != "" && f.DefValue != tt.wantDefault {
				t.Errorf("%s --%s defaults to %q, want %q", tt.command, tt.flag, f.DefValue, tt.wantDefault)
			}
			for _, s := range tt.want {
				if !strings.Contains(f.Usage, s) {
					t.Errorf("%s --%s: %q does not say %q", tt.command, tt.flag, f.Usage, s)
				}
			}
			for _, s := range tt.notWant {
				if strings.Contains(f.Usage, s) {
					t.Errorf("%s --%s: %q says %q, which is another command's", tt.command, tt.flag, f.Usage, s)
				}
			}
		})
	}
}

// runHelp runs the command tree as main does, with klog's -v and --vmodule, stdout not a
// terminal (kubectl's help wraps flag descriptions to the width of a terminal on stdout) and
// HOME /home/user (--cache-dir's default is under it).
func runHelp(t *testing.T, args ...string) result {
	t.Helper()
	t.Setenv("HOME", "/home/user")
	t.Setenv("KUBECACHEDIR", "")
	notTerminal, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = notTerminal
	defer func() { os.Stdout = stdout }()
	logFlags := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(logFlags)
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	code := Execute(t.Context(), streams, args, logFlags)
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

package plugin

import (
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

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

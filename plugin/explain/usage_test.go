package explain

import (
	"context"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

func TestExplainAcceptsKubectlStyleHPANames(t *testing.T) {
	for _, arg := range []string{"hpa/web", "horizontalpodautoscaler.autoscaling/web"} {
		r := newFixture().run(t, arg, "-n", "shop")
		if r.code != 0 || !strings.Contains(r.stdout, "web") {
			t.Errorf("explain %s: exit %d, stderr %s", arg, r.code, r.stderr)
		}
	}
}

func TestExplainRefusesABareNumberForAResourceMetric(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--assume", "cpu=90"}, `--assume cpu=90: a number without a unit would mean 90 cores: give a utilization such as 90% or a quantity with its unit such as 900m`},
		{[]string{"--set-target", "cpu=1"}, `--set-target cpu=1: a number without a unit would mean 1 cores`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := newFixture().run(t, append([]string{"web", "-n", "shop"}, tt.args...)...)
			if r.code != cmdutil.ExitUsage || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, cmdutil.ExitUsage, tt.want)
			}
		})
	}
	// With a unit the same values are what-ifs.
	for _, v := range []string{"cpu=90%", "cpu=900m", "cpu=1.5k"} {
		if r := newFixture().run(t, "web", "-n", "shop", "--assume", v); r.code != 0 {
			t.Errorf("--assume %s: exit %d, stderr %s", v, r.code, r.stderr)
		}
	}
}

func TestExplainWatchExitsWithTheLastExplanationsCode(t *testing.T) {
	tests := []struct {
		name string
		// appear creates the HPA after the first explanation.
		appear bool
		// stopWhilePrinting stops the watch while the second explanation is being printed.
		stopWhilePrinting bool
		wantCode          int
	}{
		{"an HPA missing when stopped exits 3, its failure printed once per sync", false, false, cmdutil.ExitHPANotFound},
		{"an HPA that appeared before the stop exits 0", true, false, cmdutil.ExitOK},
		{"an explanation printed as the stop comes is the one that counts", true, true, cmdutil.ExitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture()
			hpa := f.HPA
			f.HPA = nil
			ec, c := f.build()
			clk := clocktesting.NewFakeClock(now)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan result)
			var out, errOut cmdtest.SyncBuffer
			go func() { done <- runExplainTo(t, ctx, clk, ec, c, &out, &errOut, "web", "-n", "shop", "--watch") }()
			// waitFor returns once n explanations are printed: an explanation or its failure
			// (cancelling while one is still being made keeps the one before).
			waitFor := func(n int) {
				deadline := time.Now().Add(time.Minute)
				for strings.Count(out.String(), "Name:")+strings.Count(errOut.String(), `horizontalpodautoscaler "web" not found`) < n {
					if time.Now().After(deadline) {
						t.Fatalf("watch never printed explanation %d (HPA reads: %d)", n, hpaGets(c))
					}
					time.Sleep(time.Millisecond)
				}
			}
			waitFor(1)
			if tt.appear {
				if err := c.Kube.Tracker().Add(hpa); err != nil {
					t.Fatal(err)
				}
			}
			if tt.stopWhilePrinting {
				out.OnWrite(func(p []byte) {
					if strings.Contains(string(p), "Name:") {
						cancel()
					}
				})
			}
			clk.Step(15 * time.Second)
			waitFor(2)
			cancel()
			r := <-done
			if r.code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr: %s", r.code, tt.wantCode, r.stderr)
			}
			failures := 2
			if tt.appear {
				failures = 1
			}
			if got := strings.Count(r.stderr, `horizontalpodautoscaler "web" not found`); got != failures {
				t.Errorf("the failure was printed %d times, want %d (once per failed sync): %q", got, failures, r.stderr)
			}
		})
	}
}

package plugin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestUsageErrorsExitTwoWithOneActionableLine(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    string
		notWant string
	}{
		{"an unknown command", []string{"frobnicate"}, `unknown command "frobnicate" for "kubectl hpa"`, ""},
		{"a misspelt command suggests the right one", []string{"explian"}, `did you mean "explain"?`, ""},
		{"an unknown flag before any command", []string{"--bogus"}, `unknown flag: --bogus`, ""},
		{"an unknown flag of a command", []string{"run", "--bogus"}, `unknown flag: --bogus`, ""},
		{"version -o yaml", []string{"version", "-o", "yaml"}, `unknown output format "yaml": use -o json or omit -o`, ""},
		{"version with an argument", []string{"version", "now"}, `unexpected argument "now": kubectl hpa version takes no arguments`, "unknown command"},
		{"run with an argument is an unexpected argument, not an unknown command", []string{"run", "extra"},
			`unexpected argument "extra": kubectl hpa run takes no arguments; select HPAs with -n NAMESPACE, -A or -l SELECTOR`, "unknown command"},
		{"explain without a name says a NAME is expected", []string{"explain"}, `an HPA NAME is required: kubectl hpa explain NAME [-n NAMESPACE]`, ""},
		{"explain with two names", []string{"explain", "web", "api"}, `unexpected argument "api": kubectl hpa explain takes one HPA NAME`, ""},
		{"explain TYPE/NAME of another type", []string{"explain", "a/b"}, `"a/b" is not an HPA name`, ""},
		{"explain --sync-period without --watch", []string{"explain", "web", "--sync-period", "30s"}, `--sync-period only applies with --watch (-w)`, ""},
		{"completion without a shell", []string{"completion"}, `a shell is required: kubectl hpa completion bash|zsh|fish|powershell`, ""},
		{"completion with an unknown shell", []string{"completion", "tcsh"}, `invalid argument "tcsh"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runRoot(t, append(tt.args, "--kubeconfig", kubeconfig(t))...)
			if r.code != ExitUsage {
				t.Errorf("exit code %d, want %d; stderr: %s", r.code, ExitUsage, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr %q does not contain %q", r.stderr, tt.want)
			}
			if tt.notWant != "" && strings.Contains(r.stderr, tt.notWant) {
				t.Errorf("stderr %q contains %q", r.stderr, tt.notWant)
			}
			if lines := strings.Count(strings.TrimSpace(r.stderr), "\n") + 1; lines != 1 {
				t.Errorf("stderr has %d lines, want 1: %q", lines, r.stderr)
			}
		})
	}
}

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
			if r.code != ExitUsage || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, ExitUsage, tt.want)
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
		{"an HPA missing when stopped exits 3, its failure printed once per sync", false, false, ExitHPANotFound},
		{"an HPA that appeared before the stop exits 0", true, false, ExitOK},
		{"an explanation printed as the stop comes is the one that counts", true, true, ExitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture()
			hpa := f.hpa
			f.hpa = nil
			ec, c := f.build()
			clk := clocktesting.NewFakeClock(now)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan result)
			var out, errOut syncBuffer
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
				if err := c.kube.Tracker().Add(hpa); err != nil {
					t.Fatal(err)
				}
			}
			if tt.stopWhilePrinting {
				out.mu.Lock()
				out.written = func(p []byte) {
					if strings.Contains(string(p), "Name:") {
						cancel()
					}
				}
				out.mu.Unlock()
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

// The README's table and explain's help are the contract scripts read: every code the
// commands return is in both, with its reason.
func TestExitCodesAreDocumentedInTheREADMEAndHelp(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for code, reason := range exitReasons {
		row := fmt.Sprintf("| %d | `%s` |", code, reason)
		if !strings.Contains(string(readme), row) {
			t.Errorf("README.md has no exit-code row %q", row)
		}
		if !strings.Contains(strings.Join(strings.Fields(explainLong), " "), fmt.Sprintf(" %d ", code)) {
			t.Errorf("explain --help does not document exit code %d", code)
		}
	}
}

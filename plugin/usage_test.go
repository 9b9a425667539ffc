package plugin

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
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
		{"version -o wide", []string{"version", "-o", "wide"}, `unknown output format "wide": use -o json, -o yaml or omit -o`, ""},
		{"version with an argument", []string{"version", "now"}, `unexpected argument "now": kubectl hpa version takes no arguments`, "unknown command"},
		{"run with an argument is an unexpected argument, not an unknown command", []string{"run", "extra"},
			`unexpected argument "extra": kubectl hpa run takes no arguments; select HPAs with -n NAMESPACE, -A or -l SELECTOR`, "unknown command"},
		{"explain without a name says a NAME is expected", []string{"explain"}, `an HPA NAME is required: kubectl hpa explain NAME [-n NAMESPACE]`, ""},
		{"explain with two names", []string{"explain", "web", "api"}, `unexpected argument "api": kubectl hpa explain takes one HPA NAME`, ""},
		{"explain TYPE/NAME of another type", []string{"explain", "a/b"}, `"a/b" is not an HPA name`, ""},
		{"explain --sync-period without --watch", []string{"explain", "web", "--sync-period", "30s"}, `--sync-period only applies with --watch (-w)`, ""},
		{"options with an argument", []string{"options", "kubeconfig"}, `unexpected argument "kubeconfig": kubectl hpa options takes no arguments`, "unknown command"},
		{"completion without a shell", []string{"completion"}, `a shell is required: kubectl hpa completion bash|zsh|fish|powershell`, ""},
		{"completion with an unknown shell", []string{"completion", "tcsh"}, `invalid argument "tcsh"`, ""},
		{"rbac of a command without a role", []string{"rbac", "simulate"}, `no role for "simulate": kubectl hpa rbac prints the role of explain or run, or of both without an argument`, ""},
		{"rbac with two commands", []string{"rbac", "explain", "run"}, `unexpected argument "run": kubectl hpa rbac takes at most one command, explain or run`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runRoot(t, append(tt.args, "--kubeconfig", cmdtest.Kubeconfig(t))...)
			if r.code != cmdutil.ExitUsage {
				t.Errorf("exit code %d, want %d; stderr: %s", r.code, cmdutil.ExitUsage, r.stderr)
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

// The README's table, docs/exit-codes.md and the commands' help are the contract scripts read:
// every code the commands return is in both tables with its reason, and in the help of the
// command that returns it (explain's lists every code but lint's, which lint's help gives).
func TestExitCodesAreDocumentedInTheREADMEAndHelp(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join("..", "docs", "exit-codes.md"))
	if err != nil {
		t.Fatal(err)
	}
	long := func(name string) string {
		cmd, _, err := NewRootCmd(genericiooptions.NewTestIOStreamsDiscard()).Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(cmd.Long), " ")
	}
	helpOf := map[int]string{cmdutil.ExitLintFindings: "lint"}
	for code, reason := range cmdutil.ExitReasons() {
		row := fmt.Sprintf("| %d | `%s` |", code, reason)
		if !strings.Contains(string(readme), row) {
			t.Errorf("README.md has no exit-code row %q", row)
		}
		if !strings.Contains(string(page), row) {
			t.Errorf("docs/exit-codes.md has no exit-code row %q", row)
		}
		name := cmp.Or(helpOf[code], "explain")
		if !strings.Contains(long(name), fmt.Sprintf(" %d ", code)) {
			t.Errorf("%s --help does not document exit code %d", name, code)
		}
	}
}

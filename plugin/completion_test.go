package plugin

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

func TestCompletionPrintsAScriptPerShell(t *testing.T) {
	for shell, marker := range map[string]string{"bash": "__start_kubectl-hpa", "zsh": "#compdef kubectl-hpa", "fish": "complete -c kubectl-hpa", "powershell": "Register-ArgumentCompleter"} {
		t.Run(shell, func(t *testing.T) {
			r := runRoot(t, "completion", shell)
			if r.code != 0 || !strings.Contains(r.stdout, marker) {
				t.Errorf("exit %d, output lacks %q; stderr %s", r.code, marker, r.stderr)
			}
		})
	}
	if r := runRoot(t, "completion", "tcsh"); r.code != cmdutil.ExitUsage {
		t.Errorf("unknown shell: exit %d, want %d", r.code, cmdutil.ExitUsage)
	}
}

// result is one command run.
type result struct {
	stdout, stderr string
	code           int
}

// runRoot runs the real command tree through Execute.
func runRoot(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	code := Execute(t.Context(), streams, args, nil)
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

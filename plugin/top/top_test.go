package top

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

// execute runs "kubectl hpa top" with args, stdin and stdout buffers (no terminal), and
// returns its exit code and stderr.
func execute(t *testing.T, args ...string) (int, string) {
	t.Helper()
	out, errOut := &cmdtest.SyncBuffer{}, &cmdtest.SyncBuffer{}
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}
	configFlags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{Use: "kubectl-hpa", SilenceUsage: true, SilenceErrors: true}
	configFlags.AddFlags(root.PersistentFlags())
	root.AddCommand(NewCmdTop(configFlags, streams))
	root.SetArgs(append([]string{"top", "--kubeconfig", cmdtest.Kubeconfig(t)}, args...))
	root.SetOut(out)
	root.SetErr(errOut)
	return cmdutil.Report(errOut, root.ExecuteContext(context.Background())), errOut.String()
}

func TestTopRefusesWhatItCannotShow(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{name: "without a terminal it names list -w", args: []string{"-n", "shop"}, want: "kubectl hpa list -w lists again every sync period without one"},
		{name: "an argument says to choose the namespace with -n", args: []string{"web"}, want: `unexpected argument "web": kubectl-hpa top takes no arguments: choose the namespace with -n or -A`},
		{name: "-A with -n is refused as list refuses it", args: []string{"-A", "-n", "shop"}, want: "-A lists every namespace: leave out -n shop, or -A"},
		{name: "a sort column that does not exist names those that do", args: []string{"--sort-by", "age"}, want: `--sort-by "age" is not a column: use one of NAMESPACE, NAME`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr := execute(t, tc.args...)
			if code != cmdutil.ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, cmdutil.ExitUsage, tc.want)
			}
		})
	}
}

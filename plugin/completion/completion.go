package completion

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

const long = `Print a shell completion script for kubectl-hpa.

kubectl (1.26 and later) completes plugin commands by running kubectl_complete-hpa from PATH,
which this project ships (krew installs it). To complete the kubectl-hpa binary itself, load
the script this command prints:

  bash:  source <(kubectl-hpa completion bash)
  zsh:   kubectl-hpa completion zsh > "${fpath[1]}/_kubectl-hpa"
  fish:  kubectl-hpa completion fish | source`

// NewCmdCompletion builds "kubectl hpa completion bash|zsh|fish|powershell".
func NewCmdCompletion(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:                   "completion bash|zsh|fish|powershell",
		DisableFlagsInUseLine: true,
		Short:                 "Print a shell completion script",
		Long:                  long,
		ValidArgs:             []string{"bash", "zsh", "fish", "powershell"},
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return cmdutil.UsageErrorf("a shell is required: kubectl hpa completion bash|zsh|fish|powershell")
			case len(args) > 1:
				return cmdutil.UsageErrorf("unexpected argument %q: kubectl hpa completion takes one shell", args[1])
			}
			return cobra.OnlyValidArgs(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(streams.Out, true)
			case "zsh":
				return root.GenZshCompletion(streams.Out)
			case "fish":
				return root.GenFishCompletion(streams.Out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(streams.Out)
			}
			return cmdutil.UsageErrorf("unknown shell %q: use bash, zsh, fish or powershell", args[0])
		},
	}
	cmdutil.WithUsageExitCodes(cmd)
	return cmd
}

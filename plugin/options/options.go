package options

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

const example = `  # Print the flags every command accepts
  kubectl hpa options`

// NewCmdOptions builds "kubectl hpa options".
func NewCmdOptions(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "options",
		Short:   "Print the list of flags inherited by all commands",
		Long:    "Print the list of flags inherited by all commands",
		Example: example,
		Args:    cmdutil.NoArgs(""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Usage()
		},
	}
	// The list is the command's output: cobra writes usage to Out when it is set.
	cmd.SetOut(streams.Out)
	templates.UseOptionsTemplates(cmd)
	// kubectl's options template prints nothing for --help; the list is this command's help.
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) { _ = c.Usage() })
	cmdutil.WithUsageExitCodes(cmd)
	return cmd
}

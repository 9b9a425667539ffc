// Package plugin holds the cobra commands of kubectl hpa.
package plugin

import (
	"context"
	"errors"
	goflag "flag"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// ExitError carries a process exit code chosen by a command.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// NewRootCmd builds the "kubectl hpa" command tree.
func NewRootCmd(streams genericiooptions.IOStreams) *cobra.Command {
	configFlags := genericclioptions.NewConfigFlags(true)
	cmd := &cobra.Command{
		Use:           "kubectl-hpa",
		Short:         "See, trust and control Horizontal Pod Autoscalers",
		Long:          "kubectl hpa computes Horizontal Pod Autoscaler decisions exactly as the Kubernetes v1.37 controller does,\nexplains them step by step, and can run the control loop in the foreground.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl hpa",
		},
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	configFlags.AddFlags(cmd.PersistentFlags())
	cmd.AddCommand(NewCmdVersion(streams))
	cmd.AddCommand(NewCmdExplain(configFlags, streams), NewCmdCompletion(streams))
	cmd.AddCommand(NewCmdRun(configFlags, streams))
	return cmd
}

// Execute runs the command line and returns the process exit code. logFlags, when not nil,
// holds klog's flags; -v and --vmodule from it are offered on every command, as kubectl does.
func Execute(ctx context.Context, streams genericiooptions.IOStreams, args []string, logFlags *goflag.FlagSet) int {
	cmd := NewRootCmd(streams)
	if logFlags != nil {
		for _, name := range []string{"v", "vmodule"} {
			if f := logFlags.Lookup(name); f != nil {
				cmd.PersistentFlags().AddGoFlag(f)
			}
		}
	}
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(streams.ErrOut, "error: %v\n", err)
		var ee *ExitError
		if errors.As(err, &ee) {
			return ee.Code
		}
		return 1
	}
	return 0
}

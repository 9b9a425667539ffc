// Package plugin holds the cobra commands of kubectl hpa.
package plugin

import (
	"context"
	"errors"
	goflag "flag"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
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
	configFlags := genericclioptions.NewConfigFlags(true).WithWrapConfigFn(withUserAgent)
	cmd := &cobra.Command{
		Use:           "kubectl-hpa",
		Short:         "See, trust and control Horizontal Pod Autoscalers",
		Long:          "kubectl hpa computes Horizontal Pod Autoscaler decisions exactly as the Kubernetes v1.37 controller does,\nexplains them step by step, simulates them over time under a load you give, and can run the control loop in the foreground.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl hpa",
		},
		// Runnable, so that an unknown command reaches RunE and exits with ExitUsage;
		// cobra reports it before any hook otherwise, as a plain error.
		Args:                       cobra.ArbitraryArgs,
		SuggestionsMinimumDistance: 2,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf(": did you mean %q?", s[0])
			}
			return usageErrorf("%s (see kubectl hpa --help)", msg)
		},
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	configFlags.AddFlags(cmd.PersistentFlags())
	withUsageExitCodes(cmd)
	cmd.AddCommand(NewCmdVersion(streams))
	cmd.AddCommand(NewCmdExplain(configFlags, streams), NewCmdCompletion(streams))
	cmd.AddCommand(NewCmdRun(configFlags, streams))
	cmd.AddCommand(NewCmdSimulate(configFlags, streams))
	return cmd
}

// withUserAgent gives every client built from the kubeconfig flags the plugin's one user agent,
// so audit logs name the version that sent each request.
func withUserAgent(cfg *rest.Config) *rest.Config {
	cfg.UserAgent = UserAgent()
	return cfg
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
	return report(streams.ErrOut, cmd.ExecuteContext(ctx))
}

// report prints err as one line on errOut, unless it was printed already, and returns the
// exit code it carries.
func report(errOut io.Writer, err error) int {
	if err == nil {
		return ExitOK
	}
	var printed alreadyReported
	if !errors.As(err, &printed) {
		fmt.Fprintf(errOut, "error: %v\n", err)
	}
	return exitCode(err)
}

// alreadyReported is an error the command has printed itself (explain --watch prints each
// failure as it happens and exits with the last one's code).
type alreadyReported struct{ err error }

func (a alreadyReported) Error() string { return a.err.Error() }
func (a alreadyReported) Unwrap() error { return a.err }

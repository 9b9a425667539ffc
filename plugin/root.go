// Package plugin is the root command, kubectl hpa: its global flags and logging, and one
// subcommand from each command package (explain, list, lint, run, simulate, timeline, tune,
// rbac, version, completion).
package plugin

import (
	"context"
	goflag "flag"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/kubectl/pkg/util/templates"
	"k8s.io/kubectl/pkg/util/term"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/completion"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/explain"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/lint"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/list"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/options"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/rbac"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/run"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/simulate"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/timeline"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/top"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/tune"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/version"
)

// NewRootCmd builds the "kubectl hpa" command tree.
func NewRootCmd(streams genericiooptions.IOStreams) *cobra.Command {
	configFlags := genericclioptions.NewConfigFlags(true).WithWrapConfigFn(withUserAgent)
	cmd := &cobra.Command{
		Use:   "kubectl-hpa",
		Short: "See, trust and control Horizontal Pod Autoscalers",
		Long: `kubectl hpa computes Horizontal Pod Autoscaler decisions exactly as the Kubernetes v1.37
controller does, explains them step by step, simulates them over time under a load you give,
and can run the control loop in the foreground.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl hpa",
		},
		// Runnable, so that an unknown command reaches RunE and exits with cmdutil.ExitUsage;
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
			return cmdutil.UsageErrorf("%s (see kubectl hpa --help)", msg)
		},
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	configFlags.AddFlags(cmd.PersistentFlags())
	cmd.AddCommand(version.NewCmdVersion(streams))
	cmd.AddCommand(explain.NewCmdExplain(configFlags, streams), completion.NewCmdCompletion(streams))
	cmd.AddCommand(list.NewCmdList(configFlags, streams), top.NewCmdTop(configFlags, streams))
	cmd.AddCommand(run.NewCmdRun(configFlags, streams))
	cmd.AddCommand(simulate.NewCmdSimulate(configFlags, streams))
	cmd.AddCommand(timeline.NewCmdTimeline(configFlags, streams))
	cmd.AddCommand(tune.NewCmdTune(configFlags, streams))
	cmd.AddCommand(lint.NewCmdLint(configFlags, streams))
	cmd.AddCommand(rbac.NewCmdRBAC(streams))
	cmd.AddCommand(options.NewCmdOptions(streams))
	// kubectl's help: each command lists its own flags and points to kubectl hpa options for
	// the global ones, instead of repeating them all under every command.
	templates.ActsAsRootCommand(cmd, nil)
	rootHelpSaysKubectlHPA(cmd)
	// After ActsAsRootCommand, whose flag errors add a second line "See ... --help".
	cmdutil.WithUsageExitCodes(cmd)
	return cmd
}

// rootHelpSaysKubectlHPA makes the root's help tell users to type kubectl hpa COMMAND --help:
// kubectl's template names the root there by cobra's Name(), the binary's name kubectl-hpa,
// where the rest of the help uses the display name.
func rootHelpSaysKubectlHPA(root *cobra.Command) {
	help := root.HelpFunc()
	root.SetHelpFunc(func(c *cobra.Command, args []string) {
		if c != root {
			help(c, args)
			return
		}
		out := c.OutOrStdout()
		var b strings.Builder
		c.SetOut(&b)
		help(c, args)
		c.SetOut(out)
		text := strings.Replace(b.String(), `Use "`+c.Name()+` <command>`, `Use "`+c.CommandPath()+` <command>`, 1)
		_, _ = fmt.Fprint(term.NewResponsiveWriter(out), text)
	})
}

// withUserAgent gives every client built from the kubeconfig flags the plugin's one user agent,
// so audit logs name the version that sent each request.
func withUserAgent(cfg *rest.Config) *rest.Config {
	cfg.UserAgent = version.UserAgent()
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
	return cmdutil.Report(streams.ErrOut, cmd.ExecuteContext(ctx))
}

package rbac

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	deployrbac "github.com/kubectl-hpa/kubectl-hpa/deploy/rbac"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

const long = `Print the least-privilege ClusterRoles of kubectl hpa as YAML, ready for kubectl apply -f -:
kubectl-hpa-explain holds exactly what explain (and run --dry-run=client) reads, kubectl-hpa-run
exactly what run reads and writes. Without an argument both are printed, as two documents.

They are the files of deploy/rbac/ in the source repository, built into the plugin. Bind them
with a RoleBinding for one namespace or a ClusterRoleBinding for all; deploy/rbac/README.md
says what each rule is for.`

const example = `  # Create both roles (needs the right to create ClusterRoles)
  kubectl hpa rbac | kubectl apply -f -

  # Let the user jane run kubectl hpa run in the namespace shop
  kubectl hpa rbac run | kubectl apply -f -
  kubectl create rolebinding kubectl-hpa-run --clusterrole=kubectl-hpa-run --user=jane -n shop`

// Options are the inputs of "kubectl hpa rbac".
type Options struct {
	genericiooptions.IOStreams

	// Command is the command whose role is printed: "explain", "run", or "" for every role.
	Command string
}

// NewOptions returns the options of a plain "kubectl hpa rbac".
func NewOptions(streams genericiooptions.IOStreams) *Options {
	return &Options{IOStreams: streams}
}

// NewCmdRBAC builds "kubectl hpa rbac [explain|run]".
func NewCmdRBAC(streams genericiooptions.IOStreams) *cobra.Command {
	o := NewOptions(streams)
	cmd := &cobra.Command{
		Use:                   "rbac [explain|run]",
		DisableFlagsInUseLine: true,
		Short:                 "Print the least-privilege ClusterRoles of explain and run",
		Long:                  long,
		Example:               example,
		ValidArgs:             commands(),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return cmdutil.UsageErrorf("unexpected argument %q: %s takes at most one command, %s", args[1], cmd.CommandPath(), strings.Join(commands(), " or "))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			o.Complete(args)
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	cmdutil.WithUsageExitCodes(cmd)
	return cmd
}

// commands are the commands that have a role of their own, in the order the roles are printed.
func commands() []string {
	var names []string
	for _, r := range deployrbac.Roles() {
		names = append(names, r.Command)
	}
	return names
}

// Complete takes the command from the arguments.
func (o *Options) Complete(args []string) {
	if len(args) > 0 {
		o.Command = args[0]
	}
}

// Validate checks that the command has a role.
func (o *Options) Validate() error {
	if o.Command != "" && !slices.Contains(commands(), o.Command) {
		return cmdutil.UsageErrorf("no role for %q: kubectl hpa rbac prints the role of %s, or of both without an argument", o.Command, strings.Join(commands(), " or "))
	}
	return nil
}

// Run prints the selected roles.
func (o *Options) Run() error {
	return write(o.Out, o.selected())
}

// selected are the roles of o.Command, or all of them.
func (o *Options) selected() []deployrbac.Role {
	roles := deployrbac.Roles()
	if o.Command == "" {
		return roles
	}
	return slices.DeleteFunc(roles, func(r deployrbac.Role) bool { return r.Command != o.Command })
}

// write prints each role's manifest as its file holds it, the documents separated by "---".
func write(w io.Writer, roles []deployrbac.Role) error {
	for i, r := range roles {
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return fmt.Errorf("printing the roles: %w", err)
			}
		}
		if _, err := io.WriteString(w, r.Manifest); err != nil {
			return fmt.Errorf("printing the role of %s: %w", r.Command, err)
		}
	}
	return nil
}

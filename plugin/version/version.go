package version

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

// Options are the inputs of "kubectl hpa version".
type Options struct {
	genericiooptions.IOStreams

	// Output is -o: "" for the one-line form, "json" or "yaml".
	Output string
}

// NewOptions returns the options of a plain "kubectl hpa version".
func NewOptions(streams genericiooptions.IOStreams) *Options {
	return &Options{IOStreams: streams}
}

// NewCmdVersion builds "kubectl hpa version".
func NewCmdVersion(streams genericiooptions.IOStreams) *cobra.Command {
	o := NewOptions(streams)
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of kubectl hpa",
		Args:  cmdutil.NoArgs(""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", o.Output, "Output format: json or yaml")
	cmdutil.WithUsageExitCodes(cmd)
	return cmd
}

// Validate checks -o.
func (o *Options) Validate() error {
	if o.Output != "" && o.Output != "json" && o.Output != "yaml" {
		return cmdutil.UsageErrorf("unknown output format %q: use -o json, -o yaml or omit -o", o.Output)
	}
	return nil
}

// Run prints the build's version information.
func (o *Options) Run() error {
	v := Get()
	switch o.Output {
	case "json":
		enc := json.NewEncoder(o.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = o.Out.Write(b)
		return err
	}
	_, err := fmt.Fprintln(o.Out, v)
	return err
}

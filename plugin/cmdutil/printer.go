package cmdutil

import (
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// Printer is the printer -o names, kubectl's, but for -o yaml output.YAMLPrinter: it leads
// with apiVersion, kind and metadata as kubectl's YAML of an API object does.
func Printer(flags *genericclioptions.PrintFlags) (printers.ResourcePrinter, error) {
	if flags.OutputFormat != nil && *flags.OutputFormat == "yaml" {
		return &output.YAMLPrinter{}, nil
	}
	return flags.ToPrinter()
}

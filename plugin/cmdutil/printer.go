package cmdutil

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// Printer is the printer -o names, kubectl's, but for -o yaml output.YAMLPrinter: it leads
// with apiVersion, kind and metadata as kubectl's YAML of an API object does. own are the
// formats the command prints itself (list's wide): an unknown format's error names them among
// kubectl's.
func Printer(flags *genericclioptions.PrintFlags, own ...string) (printers.ResourcePrinter, error) {
	if flags.OutputFormat != nil && *flags.OutputFormat == "yaml" {
		return &output.YAMLPrinter{}, nil
	}
	p, err := flags.ToPrinter()
	if genericclioptions.IsNoCompatiblePrinterError(err) && len(own) > 0 {
		allowed := slices.Sorted(slices.Values(append(flags.AllowedFormats(), own...)))
		return nil, fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: %s", *flags.OutputFormat, strings.Join(allowed, ","))
	}
	return p, err
}

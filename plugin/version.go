package plugin

import (
	"encoding/json"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Set at link time by the Makefile (-X).
var (
	version = "v0.0.0-dev"
	commit  = "unknown"
)

// VersionInfo is what "kubectl hpa version" reports.
type VersionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
	// Upstream names the Kubernetes release whose HPA controller decisions this build reproduces.
	Upstream string `json:"upstream"`
}

// Version returns the build's version information.
func Version() VersionInfo {
	return VersionInfo{
		Version:   version,
		Commit:    commit,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
		Upstream:  "v1.37.2",
	}
}

// NewCmdVersion builds "kubectl hpa version".
func NewCmdVersion(streams genericiooptions.IOStreams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of kubectl hpa",
		Args:  noArgs(""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := Version()
			switch output {
			case "":
				_, err := fmt.Fprintf(streams.Out, "kubectl-hpa %s (commit %s, %s, %s; decisions of Kubernetes %s)\n",
					v.Version, v.Commit, v.GoVersion, v.Platform, v.Upstream)
				return err
			case "json":
				enc := json.NewEncoder(streams.Out)
				enc.SetIndent("", "  ")
				return enc.Encode(v)
			default:
				return usageErrorf("unknown output format %q: use -o json or omit -o", output)
			}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json")
	withUsageExitCodes(cmd)
	return cmd
}

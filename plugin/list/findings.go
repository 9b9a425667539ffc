package list

import (
	"github.com/kubectl-hpa/kubectl-hpa/controller/lint"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// lintOptions are the lint rules' settings: the cluster's controller configuration, objects
// read from a cluster (Manifests false), and the APIs it serves (HPA017; not checked when
// discovery knew nothing).
func (o *Options) lintOptions(served map[string]bool) lint.Options {
	opts := lint.DefaultOptions()
	if len(served) > 0 {
		opts.ServedAPIs = served
	}
	opts.Tolerance = o.Config.Tolerance
	opts.DownscaleStabilizationWindow = o.Config.DownscaleStabilizationWindow
	opts.PodLevelResources = o.Config.PodLevelResources
	return opts
}

// lintFindings are the lint rules' findings by HPA name.
func lintFindings(found []lint.Finding) map[string][]output.Finding {
	out := map[string][]output.Finding{}
	for _, f := range found {
		out[f.HPA.Name] = append(out[f.HPA.Name], output.FindingOfLint(f))
	}
	return out
}

// worst is the rank of the worst finding, negated so that the worst sorts first (1 without
// any, after every finding).
func worst(fs []output.Finding) int {
	if len(fs) == 0 {
		return 1
	}
	return -fs[0].Severity.Rank()
}

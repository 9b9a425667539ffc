package list

import (
	"github.com/kubectl-hpa/kubectl-hpa/plugin/lint/rules"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// lintFindings are the lint rules' findings by HPA name.
func lintFindings(found []rules.Finding) map[string][]output.Finding {
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

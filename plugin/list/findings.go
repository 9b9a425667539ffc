package list

import (
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/lint/rules"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// lintFindings are the lint rules' findings by HPA name.
func lintFindings(found []rules.Finding) map[string][]v1alpha1.Finding {
	out := map[string][]v1alpha1.Finding{}
	for _, f := range found {
		out[f.HPA.Name] = append(out[f.HPA.Name], output.FindingOfLint(f))
	}
	return out
}

// worst is the rank of the worst finding, negated so that the worst sorts first (1 without
// any, after every finding).
func worst(fs []v1alpha1.Finding) int {
	if len(fs) == 0 {
		return 1
	}
	return -fs[0].Severity.Rank()
}

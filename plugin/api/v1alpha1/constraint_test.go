package v1alpha1

import (
	"testing"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// The API names a binding constraint as the decision core does: a verdict's constraint is the
// core's, printed.
func TestConstraintsAreTheCoresNames(t *testing.T) {
	for api, core := range map[string]replicas.Constraint{
		ConstraintNone:                   replicas.ConstraintNone,
		ConstraintTolerance:              replicas.ConstraintTolerance,
		ConstraintScaleUpStabilization:   replicas.ConstraintScaleUpStabilization,
		ConstraintScaleDownStabilization: replicas.ConstraintScaleDownStabilization,
		ConstraintScaleUpLimit:           replicas.ConstraintScaleUpLimit,
		ConstraintScaleDownLimit:         replicas.ConstraintScaleDownLimit,
		ConstraintMaxReplicas:            replicas.ConstraintMaxReplicas,
		ConstraintMinReplicas:            replicas.ConstraintMinReplicas,
		ConstraintMetricsUnavailable:     replicas.ConstraintMetricsUnavailable,
		ConstraintSelector:               replicas.ConstraintSelector,
		ConstraintScaleUnavailable:       replicas.ConstraintScaleUnavailable,
		ConstraintScalingDisabled:        replicas.ConstraintScalingDisabled,
	} {
		if api != string(core) {
			t.Errorf("the API says %q where the core says %q", api, core)
		}
	}
}

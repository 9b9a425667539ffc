package explain

import (
	"encoding/json"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
)

// Upstream's controller scales neither of two HPAs whose targets select the same pods
// (ScalingActive=False, AmbiguousSelector), and list decides so from the namespace's HPAs:
// explain decides the same for each of them, and says so when no other HPA selects the pods.
func TestExplainDecidesAmbiguousSelectorAsListDoes(t *testing.T) {
	tests := []struct {
		name string
		// other is the Deployment a second HPA of the namespace, web-2, targets (only web
		// exists).
		other string
		// explained are the HPAs explained.
		explained      []string
		wantConstraint string
		wantDesired    int32
		wantReason     string
	}{
		{name: "a second HPA on the same Deployment: neither is scaled", other: "web", explained: []string{"web", "web-2"},
			wantConstraint: v1alpha1.ConstraintSelector, wantDesired: 4, wantReason: "AmbiguousSelector"},
		{name: "a second HPA whose target does not exist selects no pods: decided from its metrics", other: "api", explained: []string{"web"},
			wantConstraint: v1alpha1.ConstraintTolerance, wantDesired: 4, wantReason: "ValidMetricFound"},
	}
	for _, tt := range tests {
		for _, name := range tt.explained {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				f := newFixture()
				other := f.HPA.DeepCopy()
				other.Name, other.UID = "web-2", "hpa-2-uid"
				other.Spec.ScaleTargetRef.Name = tt.other
				f.ExtraHPAs = append(f.ExtraHPAs, other)
				r := f.run(t, name, "-n", "shop", "-o", "json")
				var e v1alpha1.Explanation
				if err := json.Unmarshal([]byte(r.stdout), &e); err != nil {
					t.Fatalf("exit %d, stderr %q: %v\n%s", r.code, r.stderr, err, r.stdout)
				}
				if e.Verdict == nil || e.Decision == nil {
					t.Fatalf("no decision: exit %d, stderr %q\n%s", r.code, r.stderr, r.stdout)
				}
				if e.Verdict.Constraint != tt.wantConstraint || e.Decision.DesiredReplicas != tt.wantDesired {
					t.Errorf("constraint %s, desired %d; want %s, %d", e.Verdict.Constraint, e.Decision.DesiredReplicas, tt.wantConstraint, tt.wantDesired)
				}
				var reason string
				for _, c := range e.Decision.Conditions {
					if c.Type == string(autoscalingv2.ScalingActive) {
						reason = c.Reason
					}
				}
				if reason != tt.wantReason {
					t.Errorf("ScalingActive reason %q, want %q (conditions %+v)", reason, tt.wantReason, e.Decision.Conditions)
				}
			})
		}
	}
}

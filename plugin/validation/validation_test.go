package validation

import (
	"slices"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
)

func base() *autoscalingv2.HorizontalPodAutoscaler {
	return testbuild.HPA("shop", "web", testbuild.Target("apps/v1", "Deployment", "web"), testbuild.Max(10))
}

// The refused fields for each change to a valid HPA. test/parity holds the whole port to
// upstream's verdicts; these say what each rule is for.
func TestValidateRefusesWhatTheAPIServerRefuses(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		opts Options
		want []string
	}{
		{"a minimal HPA is valid once defaulted", ``, DefaultOptions(), nil},
		{"maxReplicas is required (and then below the default minReplicas)", `spec: {maxReplicas: 0}`, DefaultOptions(), []string{"spec.maxReplicas", "spec.maxReplicas"}},
		{"maxReplicas below minReplicas", `spec: {minReplicas: 4, maxReplicas: 3}`, DefaultOptions(), []string{"spec.maxReplicas"}},
		{"minReplicas 0 needs an Object or External metric", `spec: {minReplicas: 0}`, DefaultOptions(), []string{"spec.metrics"}},
		{"minReplicas 0 without the HPAScaleToZero gate", `spec: {minReplicas: 0, metrics: [{type: External, external: {metric: {name: q}, target: {type: Value, value: "1"}}}]}`,
			Options{}, []string{"spec.minReplicas"}},
		{"a scale target in the core group other than a ReplicationController", `spec: {scaleTargetRef: {apiVersion: v1, kind: Deployment, name: web}}`,
			DefaultOptions(), []string{"spec.scaleTargetRef.apiVersion"}},
		{"a target utilization of 0", `spec: {metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 0}}}]}`,
			DefaultOptions(), []string{"spec.metrics[0].resource.target.averageUtilization"}},
		{"a stabilization window over an hour", `spec: {behavior: {scaleDown: {stabilizationWindowSeconds: 3601}}}`,
			DefaultOptions(), []string{"spec.behavior.scaleDown.stabilizationWindowSeconds"}},
		{"an empty policy list is not defaulted", `spec: {behavior: {scaleUp: {policies: []}}}`, DefaultOptions(), []string{"spec.behavior.scaleUp.policies"}},
		{"a policy period over 30 minutes and a value of 0", `spec: {behavior: {scaleUp: {policies: [{type: Pods, value: 0, periodSeconds: 1801}]}}}`,
			DefaultOptions(), []string{"spec.behavior.scaleUp.policies[0].periodSeconds", "spec.behavior.scaleUp.policies[0].value"}},
		{"an unknown selectPolicy", `spec: {behavior: {scaleUp: {selectPolicy: Fastest}}}`, DefaultOptions(), []string{"spec.behavior.scaleUp.selectPolicy"}},
		{"a negative tolerance", `spec: {behavior: {scaleUp: {tolerance: "-0.1"}}}`, DefaultOptions(), []string{"spec.behavior.scaleUp.tolerance"}},
		{"a name that is not a DNS subdomain", `metadata: {name: Web_1}`, DefaultOptions(), []string{"metadata.name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hpa := base()
			if err := yaml.UnmarshalStrict([]byte(tt.yaml), hpa); err != nil {
				t.Fatal(err)
			}
			before := hpa.DeepCopy()
			var got []string
			for _, e := range Validate(hpa, tt.opts) {
				got = append(got, e.Field)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("refused %v, want %v", got, tt.want)
			}
			if !equality.Semantic.DeepEqual(hpa, before) {
				t.Error("Validate changed its argument; it must default a copy")
			}
		})
	}
}

func TestDefaultFillsWhatTheAPIServerFills(t *testing.T) {
	hpa := base()
	hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{SelectPolicy: ptr.To(autoscalingv2.MinChangePolicySelect)}}
	Default(hpa)
	if *hpa.Spec.MinReplicas != 1 {
		t.Errorf("minReplicas %d, want 1", *hpa.Spec.MinReplicas)
	}
	if m := hpa.Spec.Metrics; len(m) != 1 || m[0].Resource.Name != corev1.ResourceCPU || *m[0].Resource.Target.AverageUtilization != 80 {
		t.Errorf("metrics %+v, want cpu at 80%%", m)
	}
	up, down := hpa.Spec.Behavior.ScaleUp, hpa.Spec.Behavior.ScaleDown
	if *up.StabilizationWindowSeconds != 0 || len(up.Policies) != 2 || *up.SelectPolicy != autoscalingv2.MaxChangePolicySelect {
		t.Errorf("scaleUp %+v, want the API's defaults", up)
	}
	if down.StabilizationWindowSeconds != nil || *down.SelectPolicy != autoscalingv2.MinChangePolicySelect || len(down.Policies) != 1 {
		t.Errorf("scaleDown %+v: want the window unset (the controller's), Min kept, one Percent policy", down)
	}
}

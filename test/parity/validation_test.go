package parity

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/apis/autoscaling"
	autoscalingapiv2 "k8s.io/kubernetes/pkg/apis/autoscaling/v2"
	upstreamvalidation "k8s.io/kubernetes/pkg/apis/autoscaling/validation"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/validation"
)

// upstreamVerdict is what kube-apiserver v1.37.2 says on create: the v2 defaults, conversion to
// the internal type, then the registry strategy's ValidateHorizontalPodAutoscaler with the
// options the strategy passes (validationOptionsForHorizontalPodAutoscaler with no old object).
func upstreamVerdict(t *testing.T, in *autoscalingv2.HorizontalPodAutoscaler, scaleToZero bool) []string {
	t.Helper()
	v2 := in.DeepCopy()
	autoscalingapiv2.SetObjectDefaults_HorizontalPodAutoscaler(v2)
	var internal autoscaling.HorizontalPodAutoscaler
	if err := autoscalingapiv2.Convert_v2_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler(v2, &internal, nil); err != nil {
		t.Fatalf("converting to the internal type: %v", err)
	}
	opts := upstreamvalidation.HorizontalPodAutoscalerSpecValidationOptions{
		MinReplicasLowerBound: 1,
		ScaleTargetRefValidationOptions: upstreamvalidation.CrossVersionObjectReferenceValidationOptions{
			AllowEmptyAPIGroup: internal.Spec.ScaleTargetRef.Kind == "ReplicationController", RequiredCoveredByDeclarative: true,
		},
		ObjectMetricsValidationOptions: upstreamvalidation.CrossVersionObjectReferenceValidationOptions{AllowEmptyAPIGroup: true},
	}
	if scaleToZero {
		opts.MinReplicasLowerBound = 0
	}
	return verdict(upstreamvalidation.ValidateHorizontalPodAutoscaler(&internal, opts))
}

// verdict is a list's refusals as "TYPE PATH", sorted: what must agree (the messages are ours).
func verdict(errs field.ErrorList) []string {
	out := []string{}
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s %s", e.Type, e.Field))
	}
	slices.Sort(out)
	return out
}

func oursVerdict(in *autoscalingv2.HorizontalPodAutoscaler, scaleToZero bool) []string {
	return verdict(validation.Validate(in, validation.Options{ScaleToZero: scaleToZero}))
}

// validationCases are hand-picked HPAs, valid and invalid, each as YAML over a valid base.
var validationCases = []struct {
	name string
	yaml string
}{
	{"the base is valid", ``},
	{"no metrics get the cpu default", `spec: {metrics: []}`},
	{"maxReplicas missing", `spec: {maxReplicas: 0}`},
	{"maxReplicas negative", `spec: {maxReplicas: -1}`},
	{"maxReplicas below minReplicas", `spec: {minReplicas: 5, maxReplicas: 3}`},
	{"minReplicas 0 with only a resource metric", `spec: {minReplicas: 0}`},
	{"minReplicas 0 with an external metric", `spec: {minReplicas: 0, metrics: [{type: External, external: {metric: {name: queue}, target: {type: AverageValue, averageValue: "30"}}}]}`},
	{"minReplicas negative", `spec: {minReplicas: -2}`},
	{"scaleTargetRef without kind and name", `spec: {scaleTargetRef: {apiVersion: apps/v1}}`},
	{"scaleTargetRef in the core group", `spec: {scaleTargetRef: {apiVersion: v1, kind: Deployment, name: web}}`},
	{"a ReplicationController in the core group", `spec: {scaleTargetRef: {apiVersion: v1, kind: ReplicationController, name: web}}`},
	{"scaleTargetRef with a bad apiVersion", `spec: {scaleTargetRef: {apiVersion: a/b/c, kind: Deployment, name: web}}`},
	{"scaleTargetRef name with a slash", `spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: "a/b"}}`},
	{"scaleTargetRef kind ..", `spec: {scaleTargetRef: {apiVersion: apps/v1, kind: "..", name: web}}`},
	{"metric without type", `spec: {metrics: [{resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}}]}`},
	{"metric of an unknown type", `spec: {metrics: [{type: Bogus}]}`},
	{"resource metric without its field", `spec: {metrics: [{type: Resource}]}`},
	{"two sources in one metric", `spec: {metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}, pods: {metric: {name: rps}, target: {type: AverageValue, averageValue: "1"}}}]}`},
	{"utilization 0", `spec: {metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 0}}}]}`},
	{"utilization and averageValue both", `spec: {metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 50, averageValue: 100m}}}]}`},
	{"resource target of an unknown type", `spec: {metrics: [{type: Resource, resource: {name: cpu, target: {type: Percent, averageUtilization: 50}}}]}`},
	{"resource metric without a name", `spec: {metrics: [{type: Resource, resource: {target: {type: Utilization, averageUtilization: 50}}}]}`},
	{"resource metric with any name", `spec: {metrics: [{type: Resource, resource: {name: "no such thing", target: {type: Utilization, averageUtilization: 50}}}]}`},
	{"container resource", `spec: {metrics: [{type: ContainerResource, containerResource: {name: cpu, container: app, target: {type: Utilization, averageUtilization: 50}}}]}`},
	{"container resource with a bad container and name", `spec: {metrics: [{type: ContainerResource, containerResource: {name: pods, container: App_1, target: {type: Utilization, averageUtilization: 50}}}]}`},
	{"container resource extended name", `spec: {metrics: [{type: ContainerResource, containerResource: {name: example.com/gpu, container: app, target: {type: AverageValue, averageValue: "1"}}}]}`},
	{"container resource requests. prefix", `spec: {metrics: [{type: ContainerResource, containerResource: {name: requests.cpu, container: app, target: {type: AverageValue, averageValue: "1"}}}]}`},
	{"pods metric needs averageValue", `spec: {metrics: [{type: Pods, pods: {metric: {name: rps}, target: {type: Value, value: "10"}}}]}`},
	{"pods metric with a negative averageValue", `spec: {metrics: [{type: Pods, pods: {metric: {name: rps}, target: {type: AverageValue, averageValue: "-1"}}}]}`},
	{"object metric with an empty group", `spec: {metrics: [{type: Object, object: {describedObject: {apiVersion: v1, kind: Service, name: front}, metric: {name: hits}, target: {type: Value, value: "10"}}}]}`},
	{"object metric without a target value", `spec: {metrics: [{type: Object, object: {describedObject: {kind: Service, name: front}, metric: {name: "%"}, target: {type: Utilization, averageUtilization: 3}}}]}`},
	{"external with value and averageValue", `spec: {metrics: [{type: External, external: {metric: {name: q}, target: {type: Value, value: "1", averageValue: "2"}}}]}`},
	{"behavior defaults fill an empty scaleUp", `spec: {behavior: {scaleUp: {}}}`},
	{"behavior with an empty policy list", `spec: {behavior: {scaleDown: {policies: []}}}`},
	{"behavior window too long and negative", `spec: {behavior: {scaleUp: {stabilizationWindowSeconds: 3601}, scaleDown: {stabilizationWindowSeconds: -1}}}`},
	{"behavior selectPolicy unknown", `spec: {behavior: {scaleUp: {selectPolicy: Fastest}}}`},
	{"behavior policies out of range", `spec: {behavior: {scaleUp: {policies: [{type: Pods, value: 0, periodSeconds: 0}, {type: Percent, value: 10, periodSeconds: 1801}, {type: Ratio, value: 1, periodSeconds: 15}]}}}`},
	{"behavior negative tolerance", `spec: {behavior: {scaleDown: {tolerance: "-0.05"}}}`},
	{"behavior tolerance", `spec: {behavior: {scaleUp: {tolerance: "0.05"}}}`},
	{"metadata name invalid", `metadata: {name: "Web_1"}`},
	{"metadata without namespace", `metadata: {namespace: ""}`},
	{"metadata finalizer", `metadata: {finalizers: [orphan, mine, example.com/x]}`},
}

func baseHPA() *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr(int32(1)),
			MaxReplicas:    10,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(50))},
			}}},
		},
	}
}

// TestValidationParityOnChosenHPAs: for each hand-picked HPA, with the HPAScaleToZero gate on and
// off, our verdict (valid or not, and each refused field with its error type) is upstream's.
func TestValidationParityOnChosenHPAs(t *testing.T) {
	valid, invalid := 0, 0
	for _, tc := range validationCases {
		hpa := baseHPA()
		if err := yaml.Unmarshal([]byte(tc.yaml), hpa); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, gate := range []bool{true, false} {
			up, ours := upstreamVerdict(t, hpa, gate), oursVerdict(hpa, gate)
			if !slices.Equal(up, ours) {
				t.Errorf("%s (HPAScaleToZero=%v):\n  upstream: %v\n  ours:     %v", tc.name, gate, up, ours)
			}
			if len(up) == 0 {
				valid++
			} else {
				invalid++
			}
		}
	}
	if valid == 0 || invalid == 0 {
		t.Errorf("the table must hold valid and invalid HPAs: %d valid, %d invalid verdicts", valid, invalid)
	}
}

// TestValidationParityOnRandomHPAs draws HPAs from pools of valid and invalid field values (each
// field present or absent, metric sources mixed) and requires the same verdict as upstream's.
func TestValidationParityOnRandomHPAs(t *testing.T) {
	master := seedSetting(t, *masterSeedFlag, "PARITY_MASTER_SEED")
	if master == 0 {
		master = rand.Uint64()
	}
	t.Logf("master seed %d (rerun with -master-seed=%d)", master, master)
	r := rand.New(rand.NewPCG(master, 0))
	var failures []string
	valid, disagree := 0, 0
	const n = 2000
	for range n {
		seed := r.Uint64()
		hpa := randomHPA(rand.New(rand.NewPCG(seed, 1)))
		gate := seed%3 != 0
		up, ours := upstreamVerdict(t, hpa, gate), oursVerdict(hpa, gate)
		if len(up) == 0 {
			valid++
		}
		if slices.Equal(up, ours) {
			continue
		}
		if disagree++; len(failures) < 3 {
			y, _ := yaml.Marshal(hpa)
			failures = append(failures, fmt.Sprintf("HPAScaleToZero=%v\n  upstream: %v\n  ours:     %v\n%s", gate, up, ours, y))
		}
	}
	if disagree > 0 {
		t.Errorf("%d of %d random HPAs judged differently, the first:\n%s", disagree, n, strings.Join(failures, "\n"))
	}
	// The generator must reach both verdicts often enough to mean something.
	if valid < n/20 || valid > n-n/20 {
		t.Errorf("%d of %d random HPAs valid: the generator is lopsided", valid, n)
	}
}

func oneOf[T any](r *rand.Rand, vs ...T) T { return vs[r.IntN(len(vs))] }

func maybe[T any](r *rand.Rand, v T) *T {
	if r.IntN(4) == 0 {
		return nil
	}
	return &v
}

func randomQuantity(r *rand.Rand) *resource.Quantity {
	if r.IntN(3) == 0 {
		return nil
	}
	q := resource.MustParse(oneOf(r, "1", "100m", "0", "-1", "2.5", "-500m"))
	return &q
}

func randomTarget(r *rand.Rand) autoscalingv2.MetricTarget {
	t := autoscalingv2.MetricTarget{Type: oneOf[autoscalingv2.MetricTargetType](r, "Utilization", "Value", "AverageValue", "", "Percent")}
	t.Value, t.AverageValue = randomQuantity(r), randomQuantity(r)
	if r.IntN(2) == 0 {
		t.AverageUtilization = ptr(oneOf[int32](r, 50, 1, 0, -3, 200))
	}
	return t
}

func randomRef(r *rand.Rand) autoscalingv2.CrossVersionObjectReference {
	return autoscalingv2.CrossVersionObjectReference{
		APIVersion: oneOf(r, "apps/v1", "v1", "", "a/b/c", "example.com/v1beta1"),
		Kind:       oneOf(r, "Deployment", "ReplicationController", "", "..", "a/b", "StatefulSet"),
		Name:       oneOf(r, "web", "", ".", "x%y", "web-1"),
	}
}

func randomMetric(r *rand.Rand) autoscalingv2.MetricSpec {
	m := autoscalingv2.MetricSpec{Type: oneOf[autoscalingv2.MetricSourceType](r, "Resource", "Resource", "Pods", "Object", "External", "ContainerResource", "", "Bogus")}
	name := func() autoscalingv2.MetricIdentifier {
		return autoscalingv2.MetricIdentifier{Name: oneOf(r, "rps", "", "..", "a/b", "queue_length")}
	}
	// Usually the field of its type, sometimes another or a second one.
	fields := []string{string(m.Type)}
	if r.IntN(5) == 0 {
		fields = append(fields, oneOf(r, "Resource", "Pods", "Object", "External", "ContainerResource"))
	}
	if r.IntN(8) == 0 {
		fields = nil
	}
	for _, f := range fields {
		switch f {
		case "Resource", "", "Bogus":
			m.Resource = &autoscalingv2.ResourceMetricSource{Name: oneOf[corev1.ResourceName](r, "cpu", "memory", "", "gpu"), Target: randomTarget(r)}
		case "Pods":
			m.Pods = &autoscalingv2.PodsMetricSource{Metric: name(), Target: randomTarget(r)}
		case "Object":
			m.Object = &autoscalingv2.ObjectMetricSource{DescribedObject: randomRef(r), Metric: name(), Target: randomTarget(r)}
		case "External":
			m.External = &autoscalingv2.ExternalMetricSource{Metric: name(), Target: randomTarget(r)}
		case "ContainerResource":
			m.ContainerResource = &autoscalingv2.ContainerResourceMetricSource{
				Name:      oneOf[corev1.ResourceName](r, "cpu", "memory", "hugepages-2Mi", "pods", "", "example.com/gpu", "kubernetes.io/x", "requests.cpu", "Bad Name", "example.com/requests.x"),
				Container: oneOf(r, "app", "", "App", "a.b"),
				Target:    randomTarget(r),
			}
		}
	}
	return m
}

func randomRules(r *rand.Rand) *autoscalingv2.HPAScalingRules {
	if r.IntN(3) == 0 {
		return nil
	}
	rules := &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: maybe(r, oneOf[int32](r, 0, 60, 300, -1, 3600, 3601)),
		SelectPolicy:               maybe(r, oneOf[autoscalingv2.ScalingPolicySelect](r, "Max", "Min", "Disabled", "Fastest", "")),
	}
	if r.IntN(3) > 0 {
		rules.Policies = []autoscalingv2.HPAScalingPolicy{}
		for range r.IntN(3) {
			rules.Policies = append(rules.Policies, autoscalingv2.HPAScalingPolicy{
				Type:          oneOf[autoscalingv2.HPAScalingPolicyType](r, "Pods", "Percent", "Ratio", ""),
				Value:         oneOf[int32](r, 1, 4, 100, 0, -1),
				PeriodSeconds: oneOf[int32](r, 15, 60, 1800, 1801, 0, -15),
			})
		}
	}
	if r.IntN(3) == 0 {
		q := resource.MustParse(oneOf(r, "0.1", "0", "-0.01", "5"))
		rules.Tolerance = &q
	}
	return rules
}

func randomHPA(r *rand.Rand) *autoscalingv2.HorizontalPodAutoscaler {
	hpa := baseHPA()
	// Most HPAs keep most of the valid base, so that single faults are common.
	if r.IntN(4) == 0 {
		hpa.Name = oneOf(r, "web", "", "Web", "web.v2", "-x")
		hpa.Namespace = oneOf(r, "shop", "", "Shop")
	}
	if r.IntN(6) == 0 {
		hpa.Finalizers = []string{oneOf(r, "orphan", "mine", "example.com/x", "kubernetes")}
	}
	if r.IntN(3) == 0 {
		hpa.Spec.ScaleTargetRef = randomRef(r)
	}
	if r.IntN(3) == 0 {
		hpa.Spec.MinReplicas = maybe(r, oneOf[int32](r, 1, 0, -1, 3, 20))
		hpa.Spec.MaxReplicas = oneOf[int32](r, 10, 0, -1, 2, 5)
	}
	if r.IntN(2) == 0 {
		hpa.Spec.Metrics = nil
		for range r.IntN(4) {
			hpa.Spec.Metrics = append(hpa.Spec.Metrics, randomMetric(r))
		}
	}
	if r.IntN(2) == 0 {
		hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: randomRules(r), ScaleDown: randomRules(r)}
	}
	return hpa
}

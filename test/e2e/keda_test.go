//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

var scaledObjectGVR = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}

// kedaObject is one ScaledObject of the KEDA phase and the HPA KEDA's controller would write
// for it. KEDA's operator does not run here (v2.20.2's go.mod requires 354 modules, and v2.21
// wants a newer Go); the test writes what its source (v2.20.2) shows it writes, file:line below.
type kedaObject struct {
	name string
	so   string // the ScaledObject's spec and annotations, JSON
	// status is what KEDA's controller writes into the ScaledObject's status.
	status string
	hpa    func(ns string) *autoscalingv2.HorizontalPodAutoscaler
}

// kedaHPA is the HPA KEDA builds for ScaledObject name (controllers/keda/hpa.go): named
// keda-hpa-NAME (:394-403); KEDA's four labels plus every label of the ScaledObject, which
// carries scaledobject.keda.sh/name since the controller put it there
// (scaledobject_controller.go:326-341; hpa.go:130-159); the ScaledObject's annotations
// (:179); the ScaledObject as controller owner (:186-189); minReplicas 1 when
// minReplicaCount is 0 or unset (:161-162, scaledobject_types.go:96); the metrics sorted by
// type, External before Resource (:298-302).
func kedaHPA(ns, name string, minReplicas int32, annotations map[string]string, behavior *autoscalingv2.HorizontalPodAutoscalerBehavior, metrics ...autoscalingv2.MetricSpec) *autoscalingv2.HorizontalPodAutoscaler {
	hpaName := "keda-hpa-" + name
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: hpaName, Namespace: ns, Annotations: annotations, Labels: map[string]string{
			"app.kubernetes.io/name": hpaName, "app.kubernetes.io/version": strings.TrimPrefix(cluster.KEDAVersion(), "v"),
			"app.kubernetes.io/part-of": name, "app.kubernetes.io/managed-by": "keda-operator", "scaledobject.keda.sh/name": name,
		}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			MinReplicas:    ptr.To(minReplicas), MaxReplicas: 10, Metrics: metrics, Behavior: behavior,
		},
	}
}

// kedaExternal is the External metric KEDA writes for trigger index's scaler: named
// s<index>-<scaler> (pkg/scalers/scaler.go:71-73), selected by the ScaledObject's label
// (hpa.go:291-293), an AverageValue target unless the trigger's metricType says otherwise
// (scaler.go:95-139).
func kedaExternal(index, scaler, so, target string) autoscalingv2.MetricSpec {
	q := resource.MustParse(target)
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "s" + index + "-" + scaler, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"scaledobject.keda.sh/name": so}}},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}}}
}

func kedaObjects() []kedaObject {
	return []kedaObject{
		// A cpu trigger beside a prometheus one whose reads failed 5 times in a row, more than
		// the fallback's threshold of 3: KEDA's metrics server answers the metric with its
		// fallback (pkg/fallback/fallback.go:145, 243-318), status.health says so (:115-142) and
		// the Fallback condition is True (:94-98).
		{name: "web",
			so: `{"spec": {"scaleTargetRef": {"name": "web"}, "minReplicaCount": 2, "maxReplicaCount": 10, "fallback": {"failureThreshold": 3, "replicas": 6},
				"triggers": [{"type": "cpu", "metricType": "Utilization", "metadata": {"value": "50"}},
					{"type": "prometheus", "metadata": {"serverAddress": "http://prometheus.monitoring:9090", "query": "sum(rate(http_requests_total[1m]))", "threshold": "10", "activationThreshold": "2"}}]}}`,
			status: `{"scaleTargetKind": "apps/v1.Deployment", "hpaName": "keda-hpa-web", "externalMetricNames": ["s1-prometheus"], "resourceMetricNames": ["cpu"],
				"health": {"s1-prometheus": {"numberOfFailures": 5, "status": "Failing"}},
				"conditions": [{"type": "Ready", "status": "True", "reason": "ScaledObjectReady", "message": "ScaledObject is defined correctly and is ready for scaling"},
					{"type": "Active", "status": "True", "reason": "ScalerActive", "message": "Scaling is performed because triggers are active"},
					{"type": "Fallback", "status": "True", "reason": "FallbackExists", "message": "At least one trigger is falling back on this scaled object"},
					{"type": "Paused", "status": "False"}]}`,
			hpa: func(ns string) *autoscalingv2.HorizontalPodAutoscaler {
				return kedaHPA(ns, "web", 2, nil, nil, kedaExternal("1", "prometheus", "web", "10"), cmCPU50())
			}},
		// Scale to zero (minReplicaCount unset: 0) on a queue with no activation threshold, and
		// scale-in paused: KEDA keeps the HPA with scaleDown.selectPolicy Disabled (hpa.go:86-106).
		{name: "worker",
			so: `{"metadata": {"annotations": {"autoscaling.keda.sh/paused-scale-in": "true"}},
				"spec": {"scaleTargetRef": {"name": "worker"}, "maxReplicaCount": 10, "cooldownPeriod": 120,
				"triggers": [{"type": "rabbitmq", "metadata": {"queueName": "jobs", "mode": "QueueLength", "value": "20"}}]}}`,
			status: `{"hpaName": "keda-hpa-worker", "externalMetricNames": ["s0-rabbitmq-jobs"],
				"conditions": [{"type": "Ready", "status": "True", "reason": "ScaledObjectReady"}, {"type": "Active", "status": "True", "reason": "ScalerActive"},
					{"type": "Fallback", "status": "False", "reason": "NoFallbackFound"}, {"type": "Paused", "status": "True", "reason": "ScaledObjectPaused", "message": "ScaledObject is paused"}]}`,
			hpa: func(ns string) *autoscalingv2.HorizontalPodAutoscaler {
				disabled := autoscalingv2.DisabledPolicySelect
				return kedaHPA(ns, "worker", 1, map[string]string{"autoscaling.keda.sh/paused-scale-in": "true"},
					&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{SelectPolicy: &disabled}},
					kedaExternal("0", "rabbitmq-jobs", "worker", "20"))
			}},
		// A fallback on cpu alone, which KEDA never serves nor falls back on.
		{name: "cpu-only",
			so: `{"spec": {"scaleTargetRef": {"name": "cpu-only"}, "minReplicaCount": 2, "fallback": {"failureThreshold": 3, "replicas": 4},
				"triggers": [{"type": "cpu", "metricType": "Utilization", "metadata": {"value": "50"}}]}}`,
			status: `{"hpaName": "keda-hpa-cpu-only", "resourceMetricNames": ["cpu"], "conditions": [{"type": "Ready", "status": "True", "reason": "ScaledObjectReady"},
				{"type": "Fallback", "status": "False", "reason": "NoFallbackFound"}]}`,
			hpa: func(ns string) *autoscalingv2.HorizontalPodAutoscaler {
				return kedaHPA(ns, "cpu-only", 2, nil, nil, cmCPU50())
			}},
	}
}

// kedaPhase: KEDA's ScaledObject CRD installed from its module, three ScaledObjects and the
// HPAs KEDA would write for them. explain and list say that KEDA owns each HPA, which trigger
// feeds each metric, which metric is KEDA's fallback, the pause in force and what KEDA decides
// itself; lint finds the KEDA pitfalls.
func kedaPhase(ctx context.Context, t *testing.T, k cluster.Kubectl, c *cluster.Cluster) {
	t.Helper()
	if err := c.InstallKEDACRD(ctx); err != nil {
		t.Fatal(err)
	}
	// kubectl keeps discovery in a cache for hours, and explain and list read ScaledObjects only
	// where it lists keda.sh: after installing KEDA, kubectl api-resources refreshes it.
	if out, err := k.Run(ctx, "api-resources", "--api-group=keda.sh"); err != nil || !strings.Contains(out, "scaledobjects") {
		t.Fatalf("kubectl api-resources --api-group=keda.sh: %v\n%s", err, out)
	}
	const ns = "keda"
	cs := c.Client()
	dyn, err := c.Dynamic()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, o := range kedaObjects() {
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, deploymentSpec{name: o.name, replicas: 2}.build(ns), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cmCPU(o.name, 100)(ctx, t, c, nil, ns)
		so := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(o.so), &so.Object); err != nil {
			t.Fatalf("%s: %v", o.name, err)
		}
		so.SetAPIVersion("keda.sh/v1alpha1")
		so.SetKind("ScaledObject")
		so.SetName(o.name)
		so.SetNamespace(ns)
		so.SetLabels(map[string]string{"scaledobject.keda.sh/name": o.name})
		created, err := dyn.Resource(scaledObjectGVR).Namespace(ns).Create(ctx, so, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating ScaledObject %s (KEDA's CRD validates it): %v", o.name, err)
		}
		var status map[string]any
		if err := json.Unmarshal([]byte(o.status), &status); err != nil {
			t.Fatal(err)
		}
		created.Object["status"] = status
		if _, err := dyn.Resource(scaledObjectGVR).Namespace(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("writing ScaledObject %s's status: %v", o.name, err)
		}
		hpa := o.hpa(ns)
		hpa.OwnerReferences = []metav1.OwnerReference{{APIVersion: "keda.sh/v1alpha1", Kind: "ScaledObject", Name: o.name, UID: created.GetUID(),
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		if _, err := cs.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Every pod ready with a cpu sample, so that the HPAs decide on cpu (KEDA's metrics server,
	// which would serve the External ones, does not run here).
	eventually(t, 2*time.Minute, "the KEDA workloads' pods have cpu metrics", func(ctx context.Context) error {
		for _, o := range kedaObjects() {
			out, err := k.Run(ctx, "hpa", "explain", "keda-hpa-"+o.name, "-n", ns, "-o", "json")
			if err != nil && !strings.Contains(out, `"decision"`) {
				return err
			}
			if strings.Contains(out, "no metrics returned from resource metrics API") {
				return errors.New(o.name + ": no cpu metrics yet")
			}
		}
		return nil
	})
	explained := map[string]*v1alpha1.Explanation{}
	for _, o := range kedaObjects() {
		name := "keda-hpa-" + o.name
		out, err := k.Run(ctx, "hpa", "explain", name, "-n", ns, "-o", "json")
		if _, ok := errors.AsType[*exec.ExitError](err); err != nil && !ok {
			t.Fatalf("explain %s: %v", name, err)
		}
		var e v1alpha1.Explanation
		if err := json.Unmarshal([]byte(out), &e); err != nil {
			t.Fatalf("decoding explain %s -o json: %v", name, err)
		}
		explained[name] = &e
		if e.KEDA == nil || e.KEDA.ScaledObject != o.name {
			t.Errorf("explain %s: keda %+v, want ScaledObject %s", name, e.KEDA, o.name)
		}
		text, err := k.Run(ctx, "hpa", "explain", name, "-n", ns)
		t.Logf("keda: kubectl hpa explain %s -n %s (%v):\n%s", name, ns, err, text)
	}
	web := explained["keda-hpa-web"].KEDA
	if web != nil {
		if len(web.Metrics) != 2 || web.Metrics[0].Metric != "s1-prometheus" || web.Metrics[0].Trigger != "triggers[1] prometheus" ||
			web.Metrics[0].Fallback == nil || web.Metrics[0].Fallback.Replicas != 6 || web.Metrics[1].Trigger != "triggers[0] cpu" {
			t.Errorf("explain keda-hpa-web: metrics %+v, want s1-prometheus from triggers[1] in fallback at 6 replicas, cpu from triggers[0]", web.Metrics)
		}
		if !slices.ContainsFunc(web.Conditions, func(c v1alpha1.KEDACondition) bool { return c.Type == "Fallback" && c.Status == "True" }) {
			t.Errorf("explain keda-hpa-web: conditions %+v, want Fallback=True", web.Conditions)
		}
		if !hasFinding(explained["keda-hpa-web"], v1alpha1.FindingKEDAFallback) {
			t.Errorf("explain keda-hpa-web: findings %+v, want %s", explained["keda-hpa-web"].Findings, v1alpha1.FindingKEDAFallback)
		}
	}
	if worker := explained["keda-hpa-worker"]; worker.KEDA != nil {
		if p := worker.KEDA.Pause; p == nil || p.Annotation != "autoscaling.keda.sh/paused-scale-in" {
			t.Errorf("explain keda-hpa-worker: pause %+v, want paused-scale-in", p)
		}
		if !slices.ContainsFunc(worker.KEDA.Notes, func(n string) bool { return strings.Contains(n, "0 to 1 and back is KEDA's decision") }) {
			t.Errorf("explain keda-hpa-worker: notes %q, want 0 to 1 as KEDA's decision", worker.KEDA.Notes)
		}
		if !hasFinding(worker, "HPA019") || !hasFinding(worker, v1alpha1.FindingKEDAPaused) {
			t.Errorf("explain keda-hpa-worker: findings %+v, want HPA019 and %s", worker.Findings, v1alpha1.FindingKEDAPaused)
		}
	}
	if !hasFinding(explained["keda-hpa-cpu-only"], "HPA018") {
		t.Errorf("explain keda-hpa-cpu-only: findings %+v, want HPA018", explained["keda-hpa-cpu-only"].Findings)
	}

	// list says the same of each.
	out, err := k.Run(ctx, "hpa", "list", "-n", ns, "-o", "json")
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var list v1alpha1.List
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	for _, it := range list.Items {
		want, _ := json.Marshal(explained[it.Metadata.Name].KEDA)
		got, _ := json.Marshal(it.KEDA)
		if string(got) != string(want) {
			t.Errorf("list %s: keda %s, explain's %s", it.Metadata.Name, got, want)
		}
	}
	text, err := k.Run(ctx, "hpa", "list", "-n", ns)
	t.Logf("keda: kubectl hpa list -n %s (%v):\n%s", ns, err, text)
	if !strings.Contains(text, v1alpha1.FindingKEDAFallback) {
		t.Errorf("list -n %s does not show %s among the problems", ns, v1alpha1.FindingKEDAFallback)
	}
	lint, err := k.Run(ctx, "hpa", "lint", "-n", ns)
	t.Logf("keda: kubectl hpa lint -n %s (%v):\n%s", ns, err, lint)
	for _, id := range []string{"HPA018", "HPA019"} {
		if !strings.Contains(lint, id) {
			t.Errorf("lint -n %s does not find %s", ns, id)
		}
	}
}

func hasFinding(e *v1alpha1.Explanation, id string) bool {
	return e != nil && slices.ContainsFunc(e.Findings, func(f v1alpha1.Finding) bool { return f.ID == id })
}

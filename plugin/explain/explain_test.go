package explain

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/live"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history/annotation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

var now = cmdtest.Now

// ---- valid-by-default builders ----

// fixture is cmdtest's cluster of fakes, run through explain.
type fixture struct{ *cmdtest.Fixture }

func newFixture() *fixture { return &fixture{cmdtest.NewFixture()} }

// build makes explain's clients over the fixture's fakes, with its metrics.
func (f *fixture) build() (*clients, *cmdtest.Fakes) {
	live, fakes := f.Build()
	ec := &clients{Clients: live, Metrics: f.M}
	if f.MetricsErr != nil {
		ec.Metrics, ec.MetricsErr = cmdutil.UnavailableMetrics{Err: f.MetricsErr}, f.MetricsErr
	}
	return ec, fakes
}

func vpa(name, kind, target, mode string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
		"metadata": map[string]any{"name": name, "namespace": "shop"},
		"spec":     map[string]any{"targetRef": map[string]any{"apiVersion": "apps/v1", "kind": kind, "name": target}},
	}}
	if mode != "" {
		_ = unstructured.SetNestedField(u.Object, mode, "spec", "updatePolicy", "updateMode")
	}
	return u
}

// result is one command run.
type result struct {
	stdout, stderr string
	code           int
	c              *cmdtest.Fakes
}

// run executes "kubectl hpa explain" with args against the fixture, the way Execute does.
func (f *fixture) run(t *testing.T, args ...string) result {
	t.Helper()
	ec, c := f.build()
	return runExplain(t, context.Background(), nil, ec, c, args...)
}

func runExplain(t *testing.T, ctx context.Context, clk *clocktesting.FakeClock, ec *clients, c *cmdtest.Fakes, args ...string) result {
	t.Helper()
	return runExplainTo(t, ctx, clk, ec, c, &cmdtest.SyncBuffer{}, &cmdtest.SyncBuffer{}, args...)
}

// runExplainTo is runExplain writing to out and errOut, which the test may read while it runs.
func runExplainTo(t *testing.T, ctx context.Context, clk *clocktesting.FakeClock, ec *clients, c *cmdtest.Fakes, out, errOut *cmdtest.SyncBuffer, args ...string) result {
	t.Helper()
	return runExplainWith(t, ctx, clk, ec, c, out, errOut, nil, args...)
}

// runExplainWith is runExplainTo with the options tweaked (a terminal, say) before the run.
func runExplainWith(t *testing.T, ctx context.Context, clk *clocktesting.FakeClock, ec *clients, c *cmdtest.Fakes, out, errOut *cmdtest.SyncBuffer, tweak func(*Options), args ...string) result {
	t.Helper()
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}
	configFlags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{Use: "kubectl-hpa", SilenceUsage: true, SilenceErrors: true}
	configFlags.AddFlags(root.PersistentFlags())
	o := NewOptions(configFlags, streams)
	if clk == nil {
		clk = clocktesting.NewFakeClock(now)
	}
	o.Clock = clk
	o.newClients = func(context.Context, *Options) (*clients, error) { return ec, nil }
	if tweak != nil {
		tweak(o)
	}
	root.AddCommand(newCmd(o))
	root.SetArgs(append([]string{"explain", "--kubeconfig", cmdtest.Kubeconfig(t)}, args...))
	root.SetOut(out)
	root.SetErr(errOut)
	code := cmdutil.Report(errOut, root.ExecuteContext(ctx))
	return result{stdout: out.String(), stderr: errOut.String(), code: code, c: c}
}

// readOnly fails the test when any fake saw a verb other than get/list/watch.
func readOnly(t *testing.T, c *cmdtest.Fakes) {
	t.Helper()
	var actions []clienttesting.Action
	actions = append(actions, c.Kube.Actions()...)
	actions = append(actions, c.Scale.Actions()...)
	actions = append(actions, c.Dynamic.Actions()...)
	for _, a := range actions {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			t.Errorf("explain wrote: %s %s", a.GetVerb(), a.GetResource())
		}
	}
}

// requests lists the API requests made, without discovery (which is cached in real use).
func requests(c *cmdtest.Fakes) []string {
	var out []string
	for _, a := range append(c.Kube.Actions(), c.Scale.Actions()...) {
		switch a.GetResource().Resource {
		case "group", "resource", "version":
			continue
		}
		s := a.GetVerb() + " " + a.GetResource().Resource
		if sub := a.GetSubresource(); sub != "" {
			s += "/" + sub
		}
		out = append(out, s)
	}
	for _, a := range c.Dynamic.Actions() {
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	out = append(out, c.M.Calls()...)
	sort.Strings(out)
	return out
}

// ---- scenarios ----

// scenarios cover each thing explain must show; every one is rendered as text, JSON and
// YAML golden files.
func scenarios() map[string]struct {
	fx   func() *fixture
	args []string
	code int
} {
	type sc = struct {
		fx   func() *fixture
		args []string
		code int
	}
	return map[string]sc{
		"scale-up-limited-by-policy": {fx: func() *fixture {
			f := newFixture()
			f.HPA.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 60}},
			}}
			f.SetPods(4, "500m", "710m")
			f.AddPod("web-new", "500m", "900m", false, 20*time.Second, "def")
			f.AddPod("web-crashed", "500m", "", true, time.Hour, "abc")
			f.Pods[len(f.Pods)-1].Status.Phase = corev1.PodFailed
			f.Scale.Status.Replicas = 5
			f.RescaleEvent(4, 30*time.Minute)
			f.Served = append(f.Served, "autoscaling.k8s.io/v1")
			f.VPAs = []*unstructured.Unstructured{vpa("web-vpa", "Deployment", "web", ""), vpa("other", "Deployment", "api", "Auto")}
			return f
		}},
		"within-tolerance": {fx: func() *fixture {
			f := newFixture()
			f.SetPods(4, "500m", "410m")
			f.RescaleEvent(4, 20*time.Minute)
			f.HPA.Status.LastScaleTime = ptr.To(metav1.NewTime(now.Add(-20 * time.Minute)))
			f.HPA.Status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{
				{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ReadyForNewScale", Message: "recommended size matches current size", LastTransitionTime: metav1.NewTime(now.Add(-20 * time.Minute))},
				{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, Reason: "ValidMetricFound", Message: "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
			}
			return f
		}},
		// A rollout's two new pods are not ready yet: counted as 0, they bring cpu 106% (ratio
		// 1.32) to within tolerance, and the verdict says so in its sentence.
		"within-tolerance-once-unready-pods-count": {fx: func() *fixture {
			f := newFixture()
			f.SetPods(6, "500m", "528m")
			f.AddPod("web-new-1", "500m", "100m", false, 30*time.Second, "def")
			f.AddPod("web-new-2", "500m", "100m", false, 30*time.Second, "def")
			f.Scale.Spec.Replicas, f.Scale.Status.Replicas = 8, 8
			f.HPA.Status.CurrentReplicas, f.HPA.Status.DesiredReplicas = 8, 8
			return f
		}},
		"scale-down-held-by-reconstructed-history": {fx: func() *fixture {
			f := newFixture()
			tolerance := resource.MustParse("0.05")
			f.HPA.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{Tolerance: &tolerance}}
			f.SetPods(5, "500m", "150m")
			f.AddPod("web-nometric", "500m", "", true, time.Hour, "abc")
			f.Scale.Spec.Replicas, f.Scale.Status.Replicas = 6, 6
			f.RescaleEvent(4, 4*time.Minute)
			f.RescaleEvent(6, 2*time.Minute)
			f.HPA.Status.CurrentReplicas, f.HPA.Status.DesiredReplicas = 6, 6
			f.HPA.Status.LastScaleTime = ptr.To(metav1.NewTime(now.Add(-2 * time.Minute)))
			return f
		}},
		// kubectl hpa run recorded 6 until 100s ago, then 3 (its latest, still current):
		// the 5-minute window holds 6, and the 4 of the rescale events plays no part.
		"scale-down-held-by-recorded-history": {fx: func() *fixture {
			f := newFixture()
			f.SetPods(6, "500m", "150m")
			f.Scale.Spec.Replicas, f.Scale.Status.Replicas = 6, 6
			f.RescaleEvent(4, 4*time.Minute)
			f.RescaleEvent(6, 2*time.Minute)
			f.HPA.Status.CurrentReplicas, f.HPA.Status.DesiredReplicas = 6, 6
			f.HPA.Status.LastScaleTime = ptr.To(metav1.NewTime(now.Add(-2 * time.Minute)))
			written := now.Add(-20 * time.Second)
			rec := annotation.New(replicas.History{Recommendations: []replicas.Recommendation{
				{Replicas: 6, Timestamp: now.Add(-100 * time.Second)}, {Replicas: 3, Timestamp: written}}},
				string(f.HPA.UID), "node-a_5f1c", written, 15*time.Second, annotation.Horizon{Window: 300, UpPeriod: 0, DownPeriod: 0})
			f.HPA.Annotations = map[string]string{annotation.Key: rec.Encode()}
			return f
		}},
		// Run decided under a 2m window, explain under its default 5m.
		"recorded-history-under-another-window": {fx: recordedUnderAnotherWindow},
		"recorded-history-ignored": {fx: func() *fixture {
			f := newFixture()
			f.SetPods(6, "500m", "150m")
			f.Scale.Spec.Replicas, f.Scale.Status.Replicas = 6, 6
			f.HPA.Status.CurrentReplicas, f.HPA.Status.DesiredReplicas = 6, 6
			f.HPA.Annotations = map[string]string{annotation.Key: `{"v":2,"by":"kubectl-hpa"}`}
			return f
		}},
		"scale-down-without-visible-history": {fx: func() *fixture {
			f := newFixture()
			f.SetPods(6, "500m", "150m")
			f.HPA.Status.CurrentReplicas, f.HPA.Status.DesiredReplicas = 6, 6
			return f
		}},
		"clamped-above-max": {fx: func() *fixture {
			f := newFixture()
			f.SetPods(12, "500m", "400m")
			return f
		}},
		"disabled-at-zero-replicas": {fx: func() *fixture {
			f := newFixture()
			f.SetPods(0, "500m", "400m")
			return f
		}},
		"what-if": {fx: newFixture, args: []string{"--set-target", "cpu=50%", "--assume", "cpu=90%"}},
		"metrics-api-absent": {fx: func() *fixture {
			f := newFixture()
			f.Served = nil
			f.M.Err = errors.New("the server could not find the requested resource (get pods.metrics.k8s.io)")
			return f
		}, code: cmdutil.ExitMetricsUnavailable},
		"target-not-found": {fx: func() *fixture {
			f := newFixture()
			f.ScaleErr = apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web")
			return f
		}, code: cmdutil.ExitTargetNotFound},
		"keda-external-scale-to-zero": {fx: func() *fixture {
			f := newFixture()
			f.HPA.Name = "keda-hpa-web"
			f.HPA.OwnerReferences = []metav1.OwnerReference{{APIVersion: "keda.sh/v1alpha1", Kind: "ScaledObject", Name: "web", UID: "so"}}
			f.HPA.Spec.MinReplicas = ptr.To(int32(0))
			q := resource.MustParse("10")
			f.HPA.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "s0-rabbitmq-queue"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q},
			}}}
			f.Served = append(f.Served, "external.metrics.k8s.io/v1beta1")
			f.M.External = map[string][]int64{"s0-rabbitmq-queue": {75000}}
			return f
		}, args: []string{"keda-hpa-web"}},
		// KEDA's ScaledObject is read: its prometheus trigger failed 5 times, more than the
		// fallback's threshold of 3, so the value the HPA reads is KEDA's fallback, not measured.
		"keda-scaledobject-fallback": {fx: func() *fixture {
			f := newFixture()
			f.HPA.Name = "keda-hpa-web"
			f.HPA.Labels = map[string]string{"scaledobject.keda.sh/name": "web"}
			f.HPA.OwnerReferences = []metav1.OwnerReference{{APIVersion: "keda.sh/v1alpha1", Kind: "ScaledObject", Name: "web", UID: "so", Controller: ptr.To(true)}}
			q := resource.MustParse("10")
			f.HPA.Spec.Metrics = append([]autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "s1-prometheus", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"scaledobject.keda.sh/name": "web"}}},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q},
			}}}, f.HPA.Spec.Metrics...)
			f.Served = append(f.Served, "external.metrics.k8s.io/v1beta1", "keda.sh/v1alpha1")
			// KEDA answers target x fallback.replicas: 10 x 6.
			f.M.External = map[string][]int64{"s1-prometheus": {60000}}
			so := &unstructured.Unstructured{}
			if err := so.UnmarshalJSON([]byte(`{"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject", "metadata": {"name": "web", "namespace": "shop"},
				"spec": {"scaleTargetRef": {"name": "web"}, "minReplicaCount": 2, "maxReplicaCount": 10, "fallback": {"failureThreshold": 3, "replicas": 6},
					"triggers": [{"type": "cpu", "metricType": "Utilization", "metadata": {"value": "50"}}, {"type": "prometheus", "metadata": {"threshold": "10", "activationThreshold": "2"}}]},
				"status": {"hpaName": "keda-hpa-web", "externalMetricNames": ["s1-prometheus"], "health": {"s1-prometheus": {"numberOfFailures": 5, "status": "Failing"}},
					"conditions": [{"type": "Ready", "status": "True", "reason": "ScaledObjectReady"}, {"type": "Active", "status": "True", "reason": "ScalerActive"},
						{"type": "Fallback", "status": "True", "reason": "FallbackExists"}, {"type": "Paused", "status": "False"}]}}`)); err != nil {
				panic(err)
			}
			f.ScaledObjects = []*unstructured.Unstructured{so}
			return f
		}, args: []string{"keda-hpa-web"}},
		"missing-requests": {fx: func() *fixture {
			f := newFixture()
			f.SetPods(2, "500m", "400m")
			f.AddPod("web-norequest", "", "300m", true, time.Hour, "abc")
			f.Scale.Spec.Replicas, f.Scale.Status.Replicas = 3, 3
			f.HPA.Status.CurrentReplicas, f.HPA.Status.DesiredReplicas = 3, 3
			return f
		}, code: cmdutil.ExitCannotCompute},
	}
}

func TestExplainScenariosMatchGoldenFiles(t *testing.T) {
	for name, s := range scenarios() {
		for _, format := range []struct{ ext, flag string }{{"txt", ""}, {"json", "json"}, {"yaml", "yaml"}} {
			t.Run(name+"/"+format.ext, func(t *testing.T) {
				args := s.args
				if len(args) == 0 || strings.HasPrefix(args[0], "-") {
					args = append([]string{"web"}, args...)
				}
				args = append(args, "-n", "shop")
				if format.flag != "" {
					args = append(args, "-o", format.flag)
				}
				r := s.fx().run(t, args...)
				if r.code != s.code {
					t.Errorf("exit code %d, want %d; stderr:\n%s", r.code, s.code, r.stderr)
				}
				if s.code == 0 && r.stderr != "" {
					t.Errorf("unexpected stderr: %s", r.stderr)
				}
				if s.code != 0 && strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
					t.Errorf("stderr is not one line: %q", r.stderr)
				}
				cmdtest.CheckGolden(t, "explain-"+name+"."+format.ext, r.stdout)
				readOnly(t, r.c)
			})
		}
	}
}

func TestExplainReadsEachThingOnce(t *testing.T) {
	r := newFixture().run(t, "web", "-n", "shop")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// Beside the decision's reads (the controller's memory: the HPA's rescales, the
	// Deployments' resizes, the leader Lease), list's three for its overlap check and lint
	// findings: the namespace's HPAs, the targeted Deployments, the PodDisruptionBudgets.
	want := []string{
		"PodResource shop cpu app=web",
		"get deployments/scale",
		"get horizontalpodautoscalers",
		"get leases",
		"get leases",
		"get leases",
		"list deployments",
		"list events",
		"list events",
		"list horizontalpodautoscalers",
		"list poddisruptionbudgets",
		"list pods",
	}
	if diff := cmp.Diff(want, requests(r.c)); diff != "" {
		t.Errorf("requests after discovery (-want +got):\n%s", diff)
	}
}

func TestExplainFailsWithDistinctCodesAndOneLine(t *testing.T) {
	forbidden := func(verb, res string) clienttesting.ReactionFunc {
		return func(a clienttesting.Action) (bool, runtime.Object, error) {
			if a.GetVerb() == verb && a.GetResource().Resource == res {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "autoscaling", Resource: res}, "web", errors.New(`User "dev" cannot get resource`))
			}
			return false, nil, nil
		}
	}
	tests := []struct {
		name     string
		fx       func() *fixture
		args     []string
		code     int
		contains string
	}{
		{"unknown HPA", newFixture, []string{"nope", "-n", "shop"}, cmdutil.ExitHPANotFound, `horizontalpodautoscaler "nope" not found in namespace "shop": list them with kubectl get hpa -n shop`},
		{"HPA in another namespace", func() *fixture {
			f := newFixture()
			f.Namespaces = append(f.Namespaces, "other")
			return f
		}, []string{"web", "-n", "other"}, cmdutil.ExitWrongNamespace, `exists in namespace shop: pass -n shop`},
		{"a namespace given with -n that does not exist is not answered with pass -n", newFixture, []string{"nope", "-n", "nowhere"}, cmdutil.ExitWrongNamespace,
			`namespace "nowhere" does not exist: check the name given to -n (kubectl get namespaces lists them)`},
		{"a namespace given with -n that does not exist names the namespace the HPA is in", newFixture, []string{"web", "-n", "nowhere"}, cmdutil.ExitWrongNamespace,
			`namespace "nowhere" does not exist, but horizontalpodautoscaler "web" exists in namespace shop: pass -n shop`},
		{"no -n uses the kubeconfig namespace, and a missing one asks for -n", newFixture, []string{"nope"}, cmdutil.ExitWrongNamespace,
			`namespace "default", used as no -n was given, does not exist: pass the HPA's namespace with -n NAMESPACE`},
		{"no -n and the HPA elsewhere names its namespace", newFixture, []string{"web"}, cmdutil.ExitWrongNamespace,
			`namespace "default", used as no -n was given, does not exist, but horizontalpodautoscaler "web" exists in namespace shop: pass -n shop`},
		{"target missing", func() *fixture {
			f := newFixture()
			f.ScaleErr = apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web")
			return f
		}, []string{"web", "-n", "shop"}, cmdutil.ExitTargetNotFound, `create it or fix spec.scaleTargetRef`},
		{"target kind has no scale subresource", func() *fixture {
			f := newFixture()
			f.HPA.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "web"}
			return f
		}, []string{"web", "-n", "shop"}, cmdutil.ExitTargetNotScalable, `scaleTargetRef must name a kind with a scale subresource`},
		{"target kind unknown", func() *fixture {
			f := newFixture()
			f.HPA.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{APIVersion: "example.com/v1", Kind: "Widget", Name: "web"}
			return f
		}, []string{"web", "-n", "shop"}, cmdutil.ExitTargetNotScalable, `Widget "web"`},
		{"RBAC forbids the HPA", func() *fixture {
			f := newFixture()
			f.KubeReactor = forbidden("get", "horizontalpodautoscalers")
			return f
		}, []string{"web", "-n", "shop"}, cmdutil.ExitForbidden, `ask your cluster admin`},
		{"RBAC forbids the scale", func() *fixture {
			f := newFixture()
			f.ScaleErr = apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments/scale"}, "web", errors.New("no"))
			return f
		}, []string{"web", "-n", "shop"}, cmdutil.ExitForbidden, `reading the scale of Deployment "web"`},
		{"metrics API absent", func() *fixture {
			f := newFixture()
			f.Served = nil
			f.M.Err = errors.New("the server could not find the requested resource")
			return f
		}, []string{"web", "-n", "shop"}, cmdutil.ExitMetricsUnavailable, `metrics.k8s.io is not served by this cluster, so metric cpu cannot be read: install metrics-server or pass --metrics-source=heapster`},
		{"no metrics source at all", func() *fixture {
			f := newFixture()
			f.Served = nil
			f.MetricsErr = errors.New("no metrics source: the cluster serves none of metrics.k8s.io, custom.metrics.k8s.io, external.metrics.k8s.io; install metrics-server")
			return f
		}, []string{"web", "-n", "shop"}, cmdutil.ExitMetricsUnavailable, `no metrics source for metric cpu: no metrics source: the cluster serves none of`},
		{"a metrics source answering badly", func() *fixture {
			f := newFixture()
			f.M.Err = metrics.SourceFailure{Err: errors.New("heapster via service proxy kube-system/http:heapster: answered 500 to GET /apis/metrics/v1alpha1/namespaces/shop/pods")}
			return f
		}, []string{"web", "-n", "shop"}, cmdutil.ExitFailure, `metric cpu of Deployment/web cannot be read, so nothing would be scaled: failed to get cpu resource metric value: failed to get cpu utilization: unable to get metrics for resource cpu: heapster via service proxy kube-system/http:heapster: answered 500`},
		{"a metric the adapter has no series of says where to look", func() *fixture {
			f := newFixture()
			q := resource.MustParse("10")
			f.HPA.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "queue", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"q": "nothing"}}},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q},
			}}}
			f.Served = append(f.Served, "external.metrics.k8s.io/v1beta1")
			f.M.Err = metrics.MetricNotFound{GroupVersion: "external.metrics.k8s.io/v1beta1", Err: errors.New(`no metrics returned from external metrics API (external.metrics.k8s.io/v1beta1) for metric queue matching "q=nothing" in shop`)}
			return f
		}, []string{"web", "-n", "shop"}, cmdutil.ExitCannotCompute, `(ScalingActive=False, FailedGetExternalMetric): the HPA was unable to compute the replica count: unable to get external metric shop/queue/&LabelSelector{MatchLabels:map[string]string{q: nothing,},MatchExpressions:[]LabelSelectorRequirement{},}: no metrics returned from external metrics API (external.metrics.k8s.io/v1beta1) for metric queue matching "q=nothing" in shop; the adapter has no value for metric queue: compare its name and selector with what the adapter serves (kubectl get --raw /apis/external.metrics.k8s.io/v1beta1)`},
		{"bad metrics source flag", newFixture, []string{"web", "-n", "shop", "--metrics-source", "carrier-pigeon"}, cmdutil.ExitUsage, `unknown --metrics-source "carrier-pigeon"`},
		{"bad what-if value", newFixture, []string{"web", "-n", "shop", "--set-target", "cpu=lots"}, cmdutil.ExitUsage, `is neither a percentage nor a quantity`},
		{"what-if names an unknown metric", newFixture, []string{"web", "-n", "shop", "--assume", "memory=1Gi"}, cmdutil.ExitUsage, `metric "memory" is not in spec.metrics of this HPA (it has: 0=cpu)`},
		{"missing name", newFixture, []string{"-n", "shop"}, cmdutil.ExitUsage, `an HPA NAME is required`},
		{"unknown flag", newFixture, []string{"web", "--frobnicate"}, cmdutil.ExitUsage, `unknown flag: --frobnicate`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.fx().run(t, tt.args...)
			if r.code != tt.code {
				t.Errorf("exit code %d, want %d; stderr: %s", r.code, tt.code, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.contains) {
				t.Errorf("stderr %q does not contain %q", r.stderr, tt.contains)
			}
			if lines := strings.Count(strings.TrimSpace(r.stderr), "\n") + 1; lines != 1 {
				t.Errorf("stderr has %d lines, want 1: %q", lines, r.stderr)
			}
			// Only an unknown metric name needs the HPA to be recognised as bad input.
			if reqs := requests(r.c); tt.code == cmdutil.ExitUsage && !strings.Contains(tt.contains, "is not in spec.metrics") && len(reqs) > 0 {
				t.Errorf("bad input still asked the cluster: %v", reqs)
			}
			readOnly(t, r.c)
		})
	}
}

func TestExplainErrorIsStructuredWithOutputJSON(t *testing.T) {
	r := newFixture().run(t, "nope", "-n", "shop", "-o", "json")
	if r.code != cmdutil.ExitHPANotFound {
		t.Fatalf("exit code %d, want %d", r.code, cmdutil.ExitHPANotFound)
	}
	cmdtest.CheckGolden(t, "explain-error-hpa-not-found.json", r.stdout)
}

func TestExplainWatchReExplainsEverySyncPeriodUntilCancelled(t *testing.T) {
	ec, c := newFixture().build()
	clk := clocktesting.NewFakeClock(now)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result)
	go func() {
		done <- runExplain(t, ctx, clk, ec, c, "web", "-n", "shop", "--watch", "--sync-period", "30s", "-o", "json")
	}()
	// Each explanation reads the HPA once; the ticker is created before the first one.
	waitFor := func(n int) {
		deadline := time.Now().Add(time.Minute)
		for !clk.HasWaiters() || hpaGets(c) < n {
			if time.Now().After(deadline) {
				t.Fatalf("watch never reached explanation %d (HPA reads: %d)", n, hpaGets(c))
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(1)
	clk.Step(30 * time.Second)
	waitFor(2)
	cancel()
	r := <-done
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if got := strings.Count(r.stdout, `"kind": "Explanation"`); got < 2 {
		t.Errorf("printed %d explanations, want at least 2", got)
	}
}

// TestExplainWatchRedrawsInPlaceOnATerminal: on a terminal each explanation replaces the one
// before, cut to the screen's height so that the verdict stays in sight, and says how much
// more there is.
func TestExplainWatchRedrawsInPlaceOnATerminal(t *testing.T) {
	ec, c := newFixture().build()
	clk := clocktesting.NewFakeClock(now)
	ctx, cancel := context.WithCancel(context.Background())
	out := &cmdtest.SyncBuffer{}
	done := make(chan result)
	const rows = 12
	go func() {
		done <- runExplainWith(t, ctx, clk, ec, c, out, &cmdtest.SyncBuffer{}, func(o *Options) { o.terminalRows = func() int { return rows } },
			"web", "-n", "shop", "--watch", "--sync-period", "30s")
	}()
	deadline := time.Now().Add(time.Minute)
	for strings.Count(out.String(), "\x1b[H\x1b[2J") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no second frame:\n%s", out.String())
		}
		if clk.HasWaiters() && hpaGets(c) == strings.Count(out.String(), "\x1b[H\x1b[2J") {
			clk.Step(30 * time.Second)
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if r := <-done; r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	frames := strings.Split(out.String(), "\x1b[H\x1b[2J")
	for i, f := range frames[1:3] {
		lines := strings.Split(strings.TrimSuffix(f, "\n"), "\n")
		if len(lines) > rows {
			t.Errorf("frame %d has %d lines, more than the terminal's %d", i+1, len(lines), rows)
		}
		if !strings.HasPrefix(lines[3], "Verdict:") {
			t.Errorf("frame %d does not show the verdict at the top:\n%s", i+1, f)
		}
		if last := lines[len(lines)-1]; !strings.Contains(last, "more lines") {
			t.Errorf("frame %d ends with %q, not the count of lines cut", i+1, last)
		}
	}
}

func hpaGets(c *cmdtest.Fakes) int {
	n := 0
	for _, a := range c.Kube.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "horizontalpodautoscalers" {
			n++
		}
	}
	return n
}

// Reading the pods and the metrics at the same time (the live source without an
// OverlapFinder, simulate's starting point) only changes when reads go out: it must give the
// same decision as reading them one after the other, as "kubectl hpa run" and explain do (the
// overlap check looks at the pods before metrics are read).
func TestExplainParallelReadsGiveTheSequentialDecision(t *testing.T) {
	for name, s := range scenarios() {
		t.Run(name, func(t *testing.T) {
			f := s.fx()
			ec, _ := f.build()
			ctx := context.Background()
			src := live.Source(ec.Kube, ec.Scales, ec.Pods, ec.Metrics, replicas.DefaultConfig())
			decide := func(overlaps evaluation.OverlapFinder) *v1alpha1.Explanation {
				ev, err := evaluation.Evaluate(ctx, src, f.HPA.Namespace, f.HPA.Name, evaluation.Options{Now: now, Config: replicas.DefaultConfig(), Overlaps: overlaps})
				if err != nil {
					t.Fatalf("Evaluate: %v", err)
				}
				ev.Input.History = replicas.History{}
				return output.Build(output.Facts{Input: ev.Input, Decision: replicas.Decide(ev.Input)})
			}
			want, got := decide(noOverlaps{}), decide(nil)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("decision differs (-sequential +parallel):\n%s", diff)
			}
		})
	}
}

// noOverlaps finds no other HPA, so Evaluate reads pods before metrics.
type noOverlaps struct{}

func (noOverlaps) OtherHPAs(context.Context, *autoscalingv2.HorizontalPodAutoscaler, labels.Selector, []*corev1.Pod) ([]string, error) {
	return nil, nil
}

func TestExplainPrintsThroughCLIRuntimePrinters(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-o", "jsonpath={.decision.desiredReplicas} {.verdict.constraint}"}, "4 Tolerance"},
		{[]string{"-o", "go-template={{.kind}}/{{.metadata.name}}"}, "Explanation/web"},
		{[]string{"-o", "kyaml"}, "kind: \"Explanation\""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := newFixture().run(t, append([]string{"web", "-n", "shop"}, tt.args...)...)
			if r.code != 0 || !strings.Contains(r.stdout, tt.want) {
				t.Errorf("exit %d, stdout %q, want it to contain %q; stderr %s", r.code, r.stdout, tt.want, r.stderr)
			}
		})
	}
}

// recordedUnderAnotherWindow: a run started with --downscale-stabilization=2m recorded 6 130s
// ago (inside its window when it wrote, 20s ago) and 3 since, on an HPA without behavior whose
// metrics now propose 3.
func recordedUnderAnotherWindow() *fixture {
	f := newFixture()
	f.SetPods(6, "500m", "150m")
	f.HPA.Status.CurrentReplicas, f.HPA.Status.DesiredReplicas = 6, 6
	written := now.Add(-20 * time.Second)
	rec := annotation.New(replicas.History{Recommendations: []replicas.Recommendation{
		{Replicas: 6, Timestamp: now.Add(-130 * time.Second)}, {Replicas: 3, Timestamp: written}}},
		string(f.HPA.UID), "node-a_5f1c", written, 15*time.Second, annotation.Horizon{Window: 120})
	f.HPA.Annotations = map[string]string{annotation.Key: rec.Encode()}
	return f
}

// For an HPA without behavior the window is run's --downscale-stabilization, so explain decides
// as run does only under the same one: under its own default (5m) the 6 still holds, and it
// says which flag gives run's decision; under 2m it scales to 3 as run does, and says nothing.
func TestExplainSaysWhenRunRecordedTheHistoryUnderAnotherDownscaleWindow(t *testing.T) {
	cases := []struct {
		name        string
		args        []string
		wantDesired int32
		wantWarning bool
	}{
		{name: "explain's default window differs from run's: held at 6, and the flag that gives run's decision is named", wantDesired: 6, wantWarning: true},
		{name: "the same window as run's: run's decision, no warning", args: []string{"--downscale-stabilization=2m"}, wantDesired: 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := recordedUnderAnotherWindow()
			r := f.run(t, append([]string{"web", "-n", "shop", "-o", "json"}, tc.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var e v1alpha1.Explanation
			if err := json.Unmarshal([]byte(r.stdout), &e); err != nil {
				t.Fatal(err)
			}
			if e.History == nil || e.History.Source != v1alpha1.HistoryRecorded {
				t.Fatalf("history %+v, want the recorded one", e.History)
			}
			if e.Decision.DesiredReplicas != tc.wantDesired {
				t.Errorf("desired %d, want %d", e.Decision.DesiredReplicas, tc.wantDesired)
			}
			var got *v1alpha1.Warning
			for i, w := range e.Warnings {
				if w.Reason == "HistoryWindowDiffers" {
					got = &e.Warnings[i]
				}
			}
			switch {
			case tc.wantWarning && (got == nil || !strings.Contains(got.Message, "--downscale-stabilization=2m0s")):
				t.Errorf("warnings %+v, want HistoryWindowDiffers naming --downscale-stabilization=2m0s", e.Warnings)
			case !tc.wantWarning && got != nil:
				t.Errorf("warning %+v, want none", *got)
			}
		})
	}
}

// -o yaml leads as kubectl's does: apiVersion, kind, metadata. Sorting every key, as
// cli-runtime's YAML printer does, put kind at line 102 of an Explanation.
func TestExplainYAMLLeadsWithAPIVersionKindAndMetadata(t *testing.T) {
	r := newFixture().run(t, "web", "-n", "shop", "-o", "yaml")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lead := strings.SplitN(r.stdout, "\n", 4)[:3]
	if diff := cmp.Diff([]string{"apiVersion: hpa.kubectl-hpa.io/v1alpha1", "kind: Explanation", "metadata:"}, lead); diff != "" {
		t.Errorf("-o yaml starts (-want +got):\n%s", diff)
	}
}

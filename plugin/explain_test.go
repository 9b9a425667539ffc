package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	fakescale "k8s.io/client-go/scale/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/live"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history/annotation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild/fakemetrics"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// ---- valid-by-default builders ----

type fixture struct {
	hpa        *autoscalingv2.HorizontalPodAutoscaler
	extraHPAs  []*autoscalingv2.HorizontalPodAutoscaler
	pods       []*corev1.Pod
	events     []*corev1.Event
	namespaces []string
	scale      *autoscalingv1.Scale
	scaleErr   error
	// served are the group/versions discovery reports (besides core and apps).
	served []string
	vpas   []*unstructured.Unstructured
	m      *fakemetrics.Client
	// kubeReactor, when set, runs before the tracker (RBAC failures and such).
	kubeReactor clienttesting.ReactionFunc
	// metricsErr, when set, is why no metrics source could be chosen.
	metricsErr error
}

func newFixture() *fixture {
	f := &fixture{
		hpa: testbuild.HPA("shop", "web", testbuild.UID("hpa-uid"), testbuild.Generation(1), testbuild.ResourceVersion("42"),
			testbuild.Target("apps/v1", "Deployment", "web"), testbuild.Min(1), testbuild.Max(10),
			testbuild.Metrics(testbuild.CPUUtilization(80)), testbuild.ObservedGeneration(1), testbuild.Replicas(4, 4)),
		namespaces: []string{"shop"},
		served:     []string{"metrics.k8s.io/v1beta1"},
		m: &fakemetrics.Client{Name: "metrics.k8s.io/v1beta1 (fake)", At: now.Add(-30 * time.Second),
			Resource: map[corev1.ResourceName]fakemetrics.Values{}},
	}
	f.setPods(4, "500m", "400m")
	return f
}

// setPods makes n ready pods started an hour ago with the given cpu request and usage, and
// a scale of n replicas.
func (f *fixture) setPods(n int, request, usage string) {
	f.pods = nil
	f.m.Resource[corev1.ResourceCPU] = fakemetrics.Values{}
	for i := range n {
		f.addPod(fmt.Sprintf("web-%d", i), request, usage, true, time.Hour, "abc")
	}
	f.scale = &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec:       autoscalingv1.ScaleSpec{Replicas: int32(n)},
		Status:     autoscalingv1.ScaleStatus{Replicas: int32(n), Selector: "app=web"},
	}
}

func (f *fixture) addPod(name, request, usage string, ready bool, age time.Duration, hash string) {
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	var requests corev1.ResourceList
	if request != "" {
		requests = testbuild.Requests("cpu", request)
	}
	f.pods = append(f.pods, testbuild.Pod("shop", name, testbuild.Labels("app", "web", "pod-template-hash", hash),
		testbuild.Containers(testbuild.Container("app", requests)),
		testbuild.StartedAt(now.Add(-age)), testbuild.ReadySince(status, now.Add(-age))))
	if usage != "" {
		q := resource.MustParse(usage)
		f.m.Resource[corev1.ResourceCPU][name] = sampleset.Sample{MilliValue: q.MilliValue(), Timestamp: sampleset.Timestamp(now.Add(-30 * time.Second)), Window: 30 * time.Second}
	}
}

func (f *fixture) rescaleEvent(size int32, ago time.Duration) {
	f.events = append(f.events, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("web.%d", len(f.events)), Namespace: "shop"},
		InvolvedObject: corev1.ObjectReference{Kind: "HorizontalPodAutoscaler", Name: "web", Namespace: "shop"},
		Type:           corev1.EventTypeNormal, Reason: "SuccessfulRescale", Count: 1,
		Message:        fmt.Sprintf("New size: %d; reason: cpu resource utilization (percentage of request) above target", size),
		FirstTimestamp: metav1.NewTime(now.Add(-ago)), LastTimestamp: metav1.NewTime(now.Add(-ago)),
	})
}

// clients are the fakes behind one run, kept for assertions.
type clients struct {
	kube    *kubefake.Clientset
	scale   *fakescale.FakeScaleClient
	dynamic *dynamicfake.FakeDynamicClient
	m       *fakemetrics.Client
}

func (f *fixture) build() (*explainClients, *clients) {
	var objs []runtime.Object
	for _, ns := range f.namespaces {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	if f.hpa != nil {
		objs = append(objs, f.hpa)
	}
	for _, h := range f.extraHPAs {
		objs = append(objs, h)
	}
	for _, p := range f.pods {
		objs = append(objs, p)
	}
	for _, e := range f.events {
		objs = append(objs, e)
	}
	kube := kubefake.NewClientset(objs...)
	if f.kubeReactor != nil {
		kube.PrependReactor("*", "*", f.kubeReactor)
	}
	resources := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod", Namespaced: true}, {Name: "configmaps", Kind: "ConfigMap", Namespaced: true}}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment", Namespaced: true},
			{Name: "deployments/scale", Kind: "Scale", Group: "autoscaling", Version: "v1", Namespaced: true},
		}},
	}
	for _, gv := range f.served {
		resources = append(resources, &metav1.APIResourceList{GroupVersion: gv, APIResources: []metav1.APIResource{{Name: "pods", Kind: "PodMetrics", Namespaced: true}}})
	}
	kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = resources

	sc := &fakescale.FakeScaleClient{}
	sc.AddReactor("get", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if f.scaleErr != nil {
			return true, nil, f.scaleErr
		}
		return true, f.scale.DeepCopy(), nil
	})
	// A kind without /scale answers 404 from the API server, as here.
	sc.AddReactor("get", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewGenericServerResponse(404, "get", schema.GroupResource{Resource: "configmaps"}, "", "", 0, false)
	})
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: "apps", Version: "v1"}, {Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)

	scheme := runtime.NewScheme()
	var dynObjs []runtime.Object
	for _, v := range f.vpas {
		dynObjs = append(dynObjs, v)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{vpaGVR: "VerticalPodAutoscalerList"}, dynObjs...)

	ec := &explainClients{
		Kube:      kube,
		Scales:    &live.ScaleClient{Scales: sc, Mapper: mapper},
		Pods:      live.Pods{Client: kube},
		Metrics:   f.m,
		Discovery: kube.Discovery(),
		Dynamic:   dyn,
	}
	if f.metricsErr != nil {
		ec.Metrics, ec.MetricsErr = unavailableMetrics{err: f.metricsErr}, f.metricsErr
	}
	return ec, &clients{kube: kube, scale: sc, dynamic: dyn, m: f.m}
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
	c              *clients
}

// run executes "kubectl hpa explain" with args against the fixture, the way Execute does.
func (f *fixture) run(t *testing.T, args ...string) result {
	t.Helper()
	ec, c := f.build()
	return runExplain(t, context.Background(), nil, ec, c, args...)
}

func runExplain(t *testing.T, ctx context.Context, clk *clocktesting.FakeClock, ec *explainClients, c *clients, args ...string) result {
	t.Helper()
	return runExplainTo(t, ctx, clk, ec, c, &syncBuffer{}, &syncBuffer{}, args...)
}

// runExplainTo is runExplain writing to out and errOut, which the test may read while it runs.
func runExplainTo(t *testing.T, ctx context.Context, clk *clocktesting.FakeClock, ec *explainClients, c *clients, out, errOut *syncBuffer, args ...string) result {
	t.Helper()
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}
	configFlags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{Use: "kubectl-hpa", SilenceUsage: true, SilenceErrors: true}
	configFlags.AddFlags(root.PersistentFlags())
	o := NewExplainOptions(configFlags, streams)
	if clk == nil {
		clk = clocktesting.NewFakeClock(now)
	}
	o.Clock = clk
	o.newClients = func(context.Context, *ExplainOptions) (*explainClients, error) { return ec, nil }
	root.AddCommand(newCmdExplain(o))
	root.SetArgs(append([]string{"explain", "--kubeconfig", kubeconfig(t)}, args...))
	root.SetOut(out)
	root.SetErr(errOut)
	code := report(errOut, root.ExecuteContext(ctx))
	return result{stdout: out.String(), stderr: errOut.String(), code: code, c: c}
}

// kubeconfig writes a kubeconfig whose context namespace is "default" (so -n matters).
func kubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	const cfg = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]
current-context: x
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s (run go test -update to create it): %v", path, err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

// readOnly fails the test when any fake saw a verb other than get/list/watch.
func readOnly(t *testing.T, c *clients) {
	t.Helper()
	var actions []clienttesting.Action
	actions = append(actions, c.kube.Actions()...)
	actions = append(actions, c.scale.Actions()...)
	actions = append(actions, c.dynamic.Actions()...)
	for _, a := range actions {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			t.Errorf("explain wrote: %s %s", a.GetVerb(), a.GetResource())
		}
	}
}

// requests lists the API requests made, without discovery (which is cached in real use).
func requests(c *clients) []string {
	var out []string
	for _, a := range append(c.kube.Actions(), c.scale.Actions()...) {
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
	for _, a := range c.dynamic.Actions() {
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	out = append(out, c.m.Calls()...)
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
			f.hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 60}},
			}}
			f.setPods(4, "500m", "710m")
			f.addPod("web-new", "500m", "900m", false, 20*time.Second, "def")
			f.addPod("web-crashed", "500m", "", true, time.Hour, "abc")
			f.pods[len(f.pods)-1].Status.Phase = corev1.PodFailed
			f.scale.Status.Replicas = 5
			f.rescaleEvent(4, 30*time.Minute)
			f.served = append(f.served, "autoscaling.k8s.io/v1")
			f.vpas = []*unstructured.Unstructured{vpa("web-vpa", "Deployment", "web", ""), vpa("other", "Deployment", "api", "Auto")}
			return f
		}},
		"within-tolerance": {fx: func() *fixture {
			f := newFixture()
			f.setPods(4, "500m", "410m")
			f.rescaleEvent(4, 20*time.Minute)
			f.hpa.Status.LastScaleTime = ptrTo(metav1.NewTime(now.Add(-20 * time.Minute)))
			f.hpa.Status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{
				{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ReadyForNewScale", Message: "recommended size matches current size", LastTransitionTime: metav1.NewTime(now.Add(-20 * time.Minute))},
				{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, Reason: "ValidMetricFound", Message: "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
			}
			return f
		}},
		"scale-down-held-by-reconstructed-history": {fx: func() *fixture {
			f := newFixture()
			tolerance := resource.MustParse("0.05")
			f.hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{Tolerance: &tolerance}}
			f.setPods(5, "500m", "150m")
			f.addPod("web-nometric", "500m", "", true, time.Hour, "abc")
			f.scale.Spec.Replicas, f.scale.Status.Replicas = 6, 6
			f.rescaleEvent(4, 4*time.Minute)
			f.rescaleEvent(6, 2*time.Minute)
			f.hpa.Status.CurrentReplicas, f.hpa.Status.DesiredReplicas = 6, 6
			f.hpa.Status.LastScaleTime = ptrTo(metav1.NewTime(now.Add(-2 * time.Minute)))
			return f
		}},
		// kubectl hpa run recorded 6 until 100s ago, then 3 (its latest, still current):
		// the 5-minute window holds 6, and the 4 of the rescale events plays no part.
		"scale-down-held-by-recorded-history": {fx: func() *fixture {
			f := newFixture()
			f.setPods(6, "500m", "150m")
			f.scale.Spec.Replicas, f.scale.Status.Replicas = 6, 6
			f.rescaleEvent(4, 4*time.Minute)
			f.rescaleEvent(6, 2*time.Minute)
			f.hpa.Status.CurrentReplicas, f.hpa.Status.DesiredReplicas = 6, 6
			f.hpa.Status.LastScaleTime = ptrTo(metav1.NewTime(now.Add(-2 * time.Minute)))
			written := now.Add(-20 * time.Second)
			rec := annotation.New(replicas.History{Recommendations: []replicas.Recommendation{
				{Replicas: 6, Timestamp: now.Add(-100 * time.Second)}, {Replicas: 3, Timestamp: written}}},
				string(f.hpa.UID), "node-a_5f1c", written, 15*time.Second, annotation.Horizon{Window: 300, UpPeriod: 0, DownPeriod: 0})
			f.hpa.Annotations = map[string]string{annotation.Key: rec.Encode()}
			return f
		}},
		// Run decided under a 2m window, explain under its default 5m.
		"recorded-history-under-another-window": {fx: recordedUnderAnotherWindow},
		"recorded-history-ignored": {fx: func() *fixture {
			f := newFixture()
			f.setPods(6, "500m", "150m")
			f.scale.Spec.Replicas, f.scale.Status.Replicas = 6, 6
			f.hpa.Status.CurrentReplicas, f.hpa.Status.DesiredReplicas = 6, 6
			f.hpa.Annotations = map[string]string{annotation.Key: `{"v":2,"by":"kubectl-hpa"}`}
			return f
		}},
		"scale-down-without-visible-history": {fx: func() *fixture {
			f := newFixture()
			f.setPods(6, "500m", "150m")
			f.hpa.Status.CurrentReplicas, f.hpa.Status.DesiredReplicas = 6, 6
			return f
		}},
		"clamped-above-max": {fx: func() *fixture {
			f := newFixture()
			f.setPods(12, "500m", "400m")
			return f
		}},
		"disabled-at-zero-replicas": {fx: func() *fixture {
			f := newFixture()
			f.setPods(0, "500m", "400m")
			return f
		}},
		"what-if": {fx: newFixture, args: []string{"--set-target", "cpu=50%", "--assume", "cpu=90%"}},
		"metrics-api-absent": {fx: func() *fixture {
			f := newFixture()
			f.served = nil
			f.m.Err = errors.New("the server could not find the requested resource (get pods.metrics.k8s.io)")
			return f
		}, code: ExitMetricsUnavailable},
		"target-not-found": {fx: func() *fixture {
			f := newFixture()
			f.scaleErr = apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web")
			return f
		}, code: ExitTargetNotFound},
		"keda-external-scale-to-zero": {fx: func() *fixture {
			f := newFixture()
			f.hpa.Name = "keda-hpa-web"
			f.hpa.OwnerReferences = []metav1.OwnerReference{{APIVersion: "keda.sh/v1alpha1", Kind: "ScaledObject", Name: "web", UID: "so"}}
			f.hpa.Spec.MinReplicas = ptrTo(int32(0))
			q := resource.MustParse("10")
			f.hpa.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "s0-rabbitmq-queue"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q},
			}}}
			f.served = append(f.served, "external.metrics.k8s.io/v1beta1")
			f.m.External = map[string][]int64{"s0-rabbitmq-queue": {75000}}
			return f
		}, args: []string{"keda-hpa-web"}},
		"missing-requests": {fx: func() *fixture {
			f := newFixture()
			f.setPods(2, "500m", "400m")
			f.addPod("web-norequest", "", "300m", true, time.Hour, "abc")
			f.scale.Spec.Replicas, f.scale.Status.Replicas = 3, 3
			f.hpa.Status.CurrentReplicas, f.hpa.Status.DesiredReplicas = 3, 3
			return f
		}, code: ExitCannotCompute},
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
				checkGolden(t, "explain-"+name+"."+format.ext, r.stdout)
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
	want := []string{
		"PodResource shop cpu app=web",
		"get deployments/scale",
		"get horizontalpodautoscalers",
		"list events",
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
		{"unknown HPA", newFixture, []string{"nope", "-n", "shop"}, ExitHPANotFound, `horizontalpodautoscaler "nope" not found in namespace "shop": list them with kubectl get hpa -n shop`},
		{"HPA in another namespace", func() *fixture {
			f := newFixture()
			f.namespaces = append(f.namespaces, "other")
			return f
		}, []string{"web", "-n", "other"}, ExitWrongNamespace, `exists in namespace shop: pass -n shop`},
		{"namespace missing", newFixture, []string{"web", "-n", "nowhere"}, ExitWrongNamespace, `namespace "nowhere" not found`},
		{"no -n uses the kubeconfig namespace", newFixture, []string{"web"}, ExitWrongNamespace, `namespace "default" not found`},
		{"target missing", func() *fixture {
			f := newFixture()
			f.scaleErr = apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, "web")
			return f
		}, []string{"web", "-n", "shop"}, ExitTargetNotFound, `create it or fix spec.scaleTargetRef`},
		{"target kind has no scale subresource", func() *fixture {
			f := newFixture()
			f.hpa.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "web"}
			return f
		}, []string{"web", "-n", "shop"}, ExitTargetNotScalable, `scaleTargetRef must name a kind with a scale subresource`},
		{"target kind unknown", func() *fixture {
			f := newFixture()
			f.hpa.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{APIVersion: "example.com/v1", Kind: "Widget", Name: "web"}
			return f
		}, []string{"web", "-n", "shop"}, ExitTargetNotScalable, `Widget "web"`},
		{"RBAC forbids the HPA", func() *fixture {
			f := newFixture()
			f.kubeReactor = forbidden("get", "horizontalpodautoscalers")
			return f
		}, []string{"web", "-n", "shop"}, ExitForbidden, `ask your cluster admin`},
		{"RBAC forbids the scale", func() *fixture {
			f := newFixture()
			f.scaleErr = apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments/scale"}, "web", errors.New("no"))
			return f
		}, []string{"web", "-n", "shop"}, ExitForbidden, `reading the scale of Deployment "web"`},
		{"metrics API absent", func() *fixture {
			f := newFixture()
			f.served = nil
			f.m.Err = errors.New("the server could not find the requested resource")
			return f
		}, []string{"web", "-n", "shop"}, ExitMetricsUnavailable, `metrics.k8s.io is not served by this cluster, so metric cpu cannot be read: install metrics-server or pass --metrics-source=heapster`},
		{"no metrics source at all", func() *fixture {
			f := newFixture()
			f.served = nil
			f.metricsErr = errors.New("no metrics source: the cluster serves none of metrics.k8s.io, custom.metrics.k8s.io, external.metrics.k8s.io; install metrics-server")
			return f
		}, []string{"web", "-n", "shop"}, ExitMetricsUnavailable, `no metrics source for metric cpu: no metrics source: the cluster serves none of`},
		{"a metrics source answering badly", func() *fixture {
			f := newFixture()
			f.m.Err = metrics.SourceFailure{Err: errors.New("heapster via service proxy kube-system/http:heapster: answered 500 to GET /apis/metrics/v1alpha1/namespaces/shop/pods")}
			return f
		}, []string{"web", "-n", "shop"}, ExitFailure, `metric cpu of Deployment/web cannot be read, so nothing would be scaled: failed to get cpu resource metric value: failed to get cpu utilization: unable to get metrics for resource cpu: heapster via service proxy kube-system/http:heapster: answered 500`},
		{"bad metrics source flag", newFixture, []string{"web", "-n", "shop", "--metrics-source", "carrier-pigeon"}, ExitUsage, `unknown --metrics-source "carrier-pigeon"`},
		{"bad what-if value", newFixture, []string{"web", "-n", "shop", "--set-target", "cpu=lots"}, ExitUsage, `is neither a percentage nor a quantity`},
		{"what-if names an unknown metric", newFixture, []string{"web", "-n", "shop", "--assume", "memory=1Gi"}, ExitUsage, `metric "memory" is not in spec.metrics of this HPA (it has: 0=cpu)`},
		{"missing name", newFixture, []string{"-n", "shop"}, ExitUsage, `an HPA NAME is required`},
		{"unknown flag", newFixture, []string{"web", "--frobnicate"}, ExitUsage, `unknown flag: --frobnicate`},
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
			if reqs := requests(r.c); tt.code == ExitUsage && !strings.Contains(tt.contains, "is not in spec.metrics") && len(reqs) > 0 {
				t.Errorf("bad input still asked the cluster: %v", reqs)
			}
			readOnly(t, r.c)
		})
	}
}

func TestExplainErrorIsStructuredWithOutputJSON(t *testing.T) {
	r := newFixture().run(t, "nope", "-n", "shop", "-o", "json")
	if r.code != ExitHPANotFound {
		t.Fatalf("exit code %d, want %d", r.code, ExitHPANotFound)
	}
	checkGolden(t, "explain-error-hpa-not-found.json", r.stdout)
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

func hpaGets(c *clients) int {
	n := 0
	for _, a := range c.kube.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "horizontalpodautoscalers" {
			n++
		}
	}
	return n
}

// Reading the pods and the metrics at the same time (explain) only changes when reads go
// out: it must give the same decision as reading them one after the other, as
// "kubectl hpa run" does (its selector tracker looks at the pods before metrics are read).
func TestExplainParallelReadsGiveTheSequentialDecision(t *testing.T) {
	for name, s := range scenarios() {
		t.Run(name, func(t *testing.T) {
			f := s.fx()
			ec, _ := f.build()
			ctx := context.Background()
			src := live.Source(ec.Kube, ec.Scales, ec.Pods, ec.Metrics, replicas.DefaultConfig())
			decide := func(overlaps evaluation.OverlapFinder) *output.Explanation {
				ev, err := evaluation.Evaluate(ctx, src, f.hpa.Namespace, f.hpa.Name, evaluation.Options{Now: now, Config: replicas.DefaultConfig(), Overlaps: overlaps})
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
	f.setPods(6, "500m", "150m")
	f.hpa.Status.CurrentReplicas, f.hpa.Status.DesiredReplicas = 6, 6
	written := now.Add(-20 * time.Second)
	rec := annotation.New(replicas.History{Recommendations: []replicas.Recommendation{
		{Replicas: 6, Timestamp: now.Add(-130 * time.Second)}, {Replicas: 3, Timestamp: written}}},
		string(f.hpa.UID), "node-a_5f1c", written, 15*time.Second, annotation.Horizon{Window: 120})
	f.hpa.Annotations = map[string]string{annotation.Key: rec.Encode()}
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
			var e output.Explanation
			if err := json.Unmarshal([]byte(r.stdout), &e); err != nil {
				t.Fatal(err)
			}
			if e.History == nil || e.History.Source != output.HistoryRecorded {
				t.Fatalf("history %+v, want the recorded one", e.History)
			}
			if e.Decision.DesiredReplicas != tc.wantDesired {
				t.Errorf("desired %d, want %d", e.Decision.DesiredReplicas, tc.wantDesired)
			}
			var got *output.Warning
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

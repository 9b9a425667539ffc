package list

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	fakescale "k8s.io/client-go/scale/fake"
	clienttesting "k8s.io/client-go/testing"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"
	customfake "k8s.io/metrics/pkg/client/custom_metrics/fake"
	externalfake "k8s.io/metrics/pkg/client/external_metrics/fake"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/live"
	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

var now = cmdtest.Now

// cluster is a fake cluster: every object the kube clientset holds, and the cpu usage the
// metrics API serves per pod ("namespace/name").
type cluster struct {
	objects []runtime.Object
	usage   map[string]string
}

// app adds, in namespace, a Deployment of n ready pods (each requesting 500m and using usage)
// and, unless hpa is nil, its HPA.
func (c *cluster) app(namespace, name string, n int32, usage string, hpa *autoscalingv2.HorizontalPodAutoscaler) {
	c.objects = append(c.objects, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:   appsv1.DeploymentSpec{Replicas: ptr.To(n), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}},
		Status: appsv1.DeploymentStatus{Replicas: n}})
	for i := range n {
		pod := fmt.Sprintf("%s-%d", name, i)
		c.objects = append(c.objects, testbuild.Pod(namespace, pod, testbuild.Labels("app", name),
			testbuild.Containers(testbuild.Container("app", testbuild.Requests("cpu", "500m"))),
			testbuild.StartedAt(now.Add(-time.Hour)), testbuild.ReadySince(corev1.ConditionTrue, now.Add(-time.Hour))))
		if usage != "" {
			if c.usage == nil {
				c.usage = map[string]string{}
			}
			c.usage[namespace+"/"+pod] = usage
		}
	}
	if hpa != nil {
		c.objects = append(c.objects, hpa)
	}
}

// hpa is an HPA of namespace on Deployment target, 1 to maxReplicas replicas, a cpu Utilization target,
// status as its controller last wrote it (current, desired).
func hpa(namespace, name, target string, utilization, maxReplicas, current, desired int32, opts ...testbuild.HPAOption) *autoscalingv2.HorizontalPodAutoscaler {
	opts = append([]testbuild.HPAOption{testbuild.Target("apps/v1", "Deployment", target), testbuild.Min(1), testbuild.Max(maxReplicas),
		testbuild.Metrics(testbuild.CPUUtilization(utilization)), testbuild.Generation(1), testbuild.ObservedGeneration(1), testbuild.Replicas(current, desired)}, opts...)
	return testbuild.HPA(namespace, name, opts...)
}

// rescale is the SuccessfulRescale event of HPA namespace/name to size, ago ago.
func (c *cluster) rescale(namespace, name string, size int32, ago time.Duration) {
	c.objects = append(c.objects, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%d", name, size), Namespace: namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "HorizontalPodAutoscaler", Name: name, Namespace: namespace},
		Type:           corev1.EventTypeNormal, Reason: "SuccessfulRescale", Count: 1,
		Message:        fmt.Sprintf("New size: %d; reason: cpu resource utilization (percentage of request) above target", size),
		FirstTimestamp: metav1.NewTime(now.Add(-ago)), LastTimestamp: metav1.NewTime(now.Add(-ago))})
}

// shop is the cluster of the goldens: one HPA per situation in namespace shop, one in ops.
func shop() *cluster {
	c := &cluster{}
	// Busy: 90% of a 60% target, wants 3; the cluster's controller last wrote 2, two minutes
	// ago, before the samples (30 s old).
	c.app("shop", "web", 2, "450m", hpa("shop", "web", "web", 60, 10, 2, 2, testbuild.StatusManager("kube-controller-manager", now.Add(-2*time.Minute))))
	// Fought over: 50% of a 50% target keeps 2; another writer set 5 after the controller.
	c.app("shop", "api", 2, "250m", hpa("shop", "api", "api", 50, 10, 2, 5,
		testbuild.StatusManager("kube-controller-manager", now.Add(-20*time.Second)), testbuild.StatusManager("hpa-fighter", now.Add(-10*time.Second))))
	// Capped: 100% of a 50% target wants 6, max is 3.
	c.app("shop", "checkout", 3, "500m", hpa("shop", "checkout", "checkout", 50, 3, 3, 3))
	// Within tolerance: 62% of a 60% target.
	c.app("shop", "cart", 2, "310m", hpa("shop", "cart", "cart", 60, 10, 2, 2))
	// Held: 20% of an 80% target would go to 1, but it rescaled to 4 a minute ago.
	c.app("shop", "search", 4, "100m", hpa("shop", "search", "search", 80, 10, 4, 4, testbuild.LastScaleTime(now.Add(-time.Minute))))
	c.rescale("shop", "search", 4, time.Minute)
	// Blind: metrics-server has nothing for its pods.
	c.app("shop", "mailer", 2, "", hpa("shop", "mailer", "mailer", 60, 5, 2, 2))
	// Its target is gone.
	c.objects = append(c.objects, hpa("shop", "legacy", "legacy-web", 60, 5, 2, 2))
	c.app("ops", "grafana", 1, "200m", hpa("ops", "grafana", "grafana", 60, 3, 1, 1))
	return c
}

// fakes are the clients of one command run: the kube clientset, the scale client and the
// metrics API client, each recording its requests.
type fakes struct {
	kube    *kubefake.Clientset
	scale   *fakescale.FakeScaleClient
	metrics *metricsfake.Clientset
	clients *clients
}

// build makes the clients over c: the scale subresource of Deployments answered from the
// kube clientset, and the metrics API (metrics.k8s.io/v1beta1) serving c.usage, filtered by
// the list's label selector as the server filters it.
func (c *cluster) build(t *testing.T) *fakes {
	t.Helper()
	objs := slices.Clone(c.objects)
	seen := map[string]bool{}
	for _, obj := range c.objects {
		if ns := obj.(metav1.Object).GetNamespace(); !seen[ns] {
			seen[ns] = true
			objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}
	}
	kube := kubefake.NewClientset(objs...)
	sc := &fakescale.FakeScaleClient{}
	sc.AddReactor("get", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		get := a.(clienttesting.GetAction)
		d, err := kube.Tracker().Get(appsv1.SchemeGroupVersion.WithResource("deployments"), get.GetNamespace(), get.GetName())
		if err != nil {
			return true, nil, err
		}
		dep := d.(*appsv1.Deployment)
		sel, _ := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
		return true, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: dep.Name, Namespace: dep.Namespace},
			Spec: autoscalingv1.ScaleSpec{Replicas: *dep.Spec.Replicas}, Status: autoscalingv1.ScaleStatus{Replicas: dep.Status.Replicas, Selector: sel.String()}}, nil
	})
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: "apps", Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)

	res := metricsfake.NewSimpleClientset()
	res.PrependReactor("list", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		sel := a.(clienttesting.ListAction).GetListRestrictions().Labels
		out := &metricsv1beta1.PodMetricsList{}
		for _, obj := range c.objects {
			p, ok := obj.(*corev1.Pod)
			if !ok {
				continue
			}
			u := c.usage[p.Namespace+"/"+p.Name]
			if p.Namespace != a.GetNamespace() || u == "" || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			out.Items = append(out.Items, metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels},
				Timestamp: metav1.NewTime(now.Add(-30 * time.Second)), Window: metav1.Duration{Duration: 30 * time.Second},
				Containers: []metricsv1beta1.ContainerMetrics{{Name: "app", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(u)}}}})
		}
		return true, out, nil
	})
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: "metrics.k8s.io/v1beta1"}}
	m, err := metrics.NewAPIClient(metrics.APIClients{
		Discovery: disc, Resource: res,
		Custom: func(customclient.AvailableAPIsGetter) customclient.CustomMetricsClient {
			return &customfake.FakeCustomMetricsClient{}
		},
		External: &externalfake.FakeExternalMetricsClient{},
		Clock:    clocktesting.NewFakePassiveClock(now), MaxAge: metrics.DefaultMaxAge,
	}, map[string][]string{"metrics.k8s.io": {"v1beta1"}})
	if err != nil {
		t.Fatal(err)
	}
	cc := &clients{Clients: &cmdutil.Clients{Kube: kube, Scales: &live.ScaleClient{Scales: sc, Mapper: mapper}, Pods: live.Pods{Client: kube}, Discovery: kube.Discovery()},
		Metrics: m, MetricsSelection: metrics.Selection{Source: metrics.SourceMetricsAPI, Reason: "served", Detail: "metrics.k8s.io/v1beta1 (fake)"}}
	return &fakes{kube: kube, scale: sc, metrics: res, clients: cc}
}

// result is one command run.
type result struct {
	stdout, stderr string
	code           int
}

// run executes "kubectl hpa list" with args over f, the way Execute does, at now.
func run(t *testing.T, f *fakes, args ...string) result {
	t.Helper()
	out, errOut := &cmdtest.SyncBuffer{}, &cmdtest.SyncBuffer{}
	code := runIn(t, context.Background(), invocation{clock: clocktesting.NewFakeClock(now), out: out, errOut: errOut}, f, args...)
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

// invocation is where a run's output goes, its clock, and whether its stdout is a terminal.
type invocation struct {
	clock       clock.WithTicker
	out, errOut *cmdtest.SyncBuffer
	terminal    bool
}

// runIn executes "kubectl hpa list" with args over f in ctx and returns its exit code.
func runIn(t *testing.T, ctx context.Context, in invocation, f *fakes, args ...string) int {
	t.Helper()
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: in.out, ErrOut: in.errOut}
	configFlags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{Use: "kubectl-hpa", SilenceUsage: true, SilenceErrors: true}
	configFlags.AddFlags(root.PersistentFlags())
	o := NewOptions(configFlags, streams)
	o.Clock = in.clock
	o.isTerminal = func() bool { return in.terminal }
	o.newClients = func(context.Context, *Options) (*clients, error) { return f.clients, nil }
	root.AddCommand(newCmd(o))
	root.SetArgs(append([]string{"list", "--kubeconfig", cmdtest.Kubeconfig(t)}, args...))
	root.SetOut(in.out)
	root.SetErr(in.errOut)
	return cmdutil.Report(in.errOut, root.ExecuteContext(ctx))
}

package batch_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	fakescale "k8s.io/client-go/scale/fake"
	clienttesting "k8s.io/client-go/testing"
	emv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"
	customfake "k8s.io/metrics/pkg/client/custom_metrics/fake"
	externalfake "k8s.io/metrics/pkg/client/external_metrics/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/batch"
	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/live"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const ns = "shop"

// pod is one pod of the fake namespace: its labels and cpu usage ("" for no sample), the sample
// age.
type pod struct {
	name  string
	usage string
	age   time.Duration
	kv    []string
}

// cluster is a namespace of fakes, read by both paths.
type cluster struct {
	hpas      []*autoscalingv2.HorizontalPodAutoscaler
	workloads []runtime.Object
	pods      []pod
	events    []*corev1.Event
	// reactor, when set, runs before the kube tracker (failures).
	reactor clienttesting.ReactionFunc
	// metricsErr, when set, fails the PodMetrics list.
	metricsErr error
	// externalReads counts the external metrics API's lists.
	externalReads atomic.Int32
}

func deployment(name string, replicas int32, selector *metav1.LabelSelector) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: selector}, Status: appsv1.DeploymentStatus{Replicas: replicas}}
}

func statefulSet(name string, replicas int32, selector *metav1.LabelSelector) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(replicas), Selector: selector}, Status: appsv1.StatefulSetStatus{Replicas: replicas}}
}

func app(v string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": v}}
}

func hpa(name, kind, target string, spec ...autoscalingv2.MetricSpec) *autoscalingv2.HorizontalPodAutoscaler {
	if len(spec) == 0 {
		spec = []autoscalingv2.MetricSpec{testbuild.CPUUtilization(60)}
	}
	return testbuild.HPA(ns, name, testbuild.Target("apps/v1", kind, target), testbuild.Min(1), testbuild.Max(10),
		testbuild.Metrics(spec...), testbuild.Replicas(2, 2), testbuild.ObservedGeneration(1))
}

func rescale(name string, size int32, ago time.Duration) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%d", name, size), Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "HorizontalPodAutoscaler", Name: name, Namespace: ns},
		Reason:         "SuccessfulRescale", Message: fmt.Sprintf("New size: %d; reason: cpu resource utilization (percentage of request) above target", size),
		FirstTimestamp: metav1.NewTime(now.Add(-ago)), LastTimestamp: metav1.NewTime(now.Add(-ago))}
}

// fakes are the clients over c: the kube clientset, the scale subresource answering from
// the workloads it holds, and the metrics API over PodMetrics filtered by the list's selector
// as the server filters them.
func (c *cluster) fakes(t *testing.T) (*kubefake.Clientset, evaluation.ScaleReader, metrics.Client) {
	t.Helper()
	objs := slices.Clone(c.workloads)
	var usage []metricsv1beta1.PodMetrics
	for _, p := range c.pods {
		objs = append(objs, testbuild.Pod(ns, p.name, testbuild.Labels(p.kv...), testbuild.Containers(testbuild.Container("app", testbuild.Requests("cpu", "500m"))),
			testbuild.StartedAt(now.Add(-time.Hour)), testbuild.ReadySince(corev1.ConditionTrue, now.Add(-time.Hour))))
		if p.usage != "" {
			m := metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: ns, Labels: testbuild.Pod(ns, p.name, testbuild.Labels(p.kv...)).Labels},
				Timestamp: metav1.NewTime(now.Add(-p.age)), Window: metav1.Duration{Duration: 15 * time.Second},
				Containers: []metricsv1beta1.ContainerMetrics{{Name: "app", Usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(p.usage)}}}}
			usage = append(usage, m)
		}
	}
	for _, h := range c.hpas {
		objs = append(objs, h)
	}
	for _, e := range c.events {
		objs = append(objs, e)
	}
	kube := kubefake.NewClientset(objs...)
	if c.reactor != nil {
		kube.PrependReactor("*", "*", c.reactor)
	}
	sc := &fakescale.FakeScaleClient{}
	sc.AddReactor("get", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		get := a.(clienttesting.GetAction)
		var spec, status int32
		var sel *metav1.LabelSelector
		switch a.GetResource().Resource {
		case "deployments":
			w, err := kube.AppsV1().Deployments(get.GetNamespace()).Get(context.Background(), get.GetName(), metav1.GetOptions{})
			if err != nil {
				return true, nil, err
			}
			spec, status, sel = *w.Spec.Replicas, w.Status.Replicas, w.Spec.Selector
		case "statefulsets":
			w, err := kube.AppsV1().StatefulSets(get.GetNamespace()).Get(context.Background(), get.GetName(), metav1.GetOptions{})
			if err != nil {
				return true, nil, err
			}
			spec, status, sel = *w.Spec.Replicas, w.Status.Replicas, w.Spec.Selector
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return true, nil, err
		}
		return true, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: get.GetName(), Namespace: ns},
			Spec: autoscalingv1.ScaleSpec{Replicas: spec}, Status: autoscalingv1.ScaleStatus{Replicas: status, Selector: s.String()}}, nil
	})
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: "apps", Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, meta.RESTScopeNamespace)

	res := metricsfake.NewSimpleClientset()
	res.PrependReactor("list", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if c.metricsErr != nil {
			return true, nil, c.metricsErr
		}
		sel := a.(clienttesting.ListAction).GetListRestrictions().Labels
		out := &metricsv1beta1.PodMetricsList{}
		for _, m := range usage {
			if sel.Matches(labels.Set(m.Labels)) {
				out.Items = append(out.Items, m)
			}
		}
		return true, out, nil
	})
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}, FakedServerVersion: nil}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: "metrics.k8s.io/v1beta1"}, {GroupVersion: "external.metrics.k8s.io/v1beta1"}}
	external := &externalfake.FakeExternalMetricsClient{}
	external.AddReactor("list", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		c.externalReads.Add(1)
		return true, &emv1beta1.ExternalMetricValueList{Items: []emv1beta1.ExternalMetricValue{
			{MetricName: "queue_depth", Timestamp: metav1.NewTime(now.Add(-10 * time.Second)), Value: resource.MustParse("25")}}}, nil
	})
	m, err := metrics.NewAPIClient(metrics.APIClients{
		Discovery: disc, Resource: res,
		Custom: func(customclient.AvailableAPIsGetter) customclient.CustomMetricsClient {
			return &customfake.FakeCustomMetricsClient{}
		},
		External: external,
		Clock:    clocktesting.NewFakePassiveClock(now), MaxAge: metrics.DefaultMaxAge,
	}, map[string][]string{"metrics.k8s.io": {"v1beta1"}, "external.metrics.k8s.io": {"v1beta1"}})
	if err != nil {
		t.Fatal(err)
	}
	return kube, &live.ScaleClient{Scales: sc, Mapper: mapper}, m
}

// served is what an evaluation was served and decided, in comparable form.
type served struct {
	Scale    *replicas.Scale
	ScaleErr string
	Pods     []string
	Metrics  []string
	History  replicas.History
	Desired  int32
	Phase    replicas.Phase
}

func servedOf(ev *evaluation.Evaluation) served {
	s := served{Scale: ev.Input.Scale, History: ev.Input.History, Desired: ev.Decision.DesiredReplicas, Phase: ev.Decision.Phase}
	if ev.Input.ScaleErr != nil {
		s.ScaleErr = ev.Input.ScaleErr.Error()
	}
	for _, p := range ev.Input.Pods {
		s.Pods = append(s.Pods, p.Name)
	}
	for _, m := range ev.Input.Metrics {
		line := fmt.Sprintf("err=%v at=%s", m.Err, m.Timestamp.Format(time.RFC3339))
		if m.PodSamples != nil {
			line += fmt.Sprintf(" samples=%v", m.PodSamples.Map())
		}
		s.Metrics = append(s.Metrics, line)
	}
	return s
}

func TestEachHPAIsServedWhatItsOwnReadsServe(t *testing.T) {
	forbidden := func(resource string) clienttesting.ReactionFunc {
		return func(a clienttesting.Action) (bool, runtime.Object, error) {
			if a.GetVerb() == "list" && a.GetResource().Resource == resource {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", fmt.Errorf("RBAC: denied"))
			}
			return false, nil, nil
		}
	}
	base := func() cluster {
		return cluster{
			hpas: []*autoscalingv2.HorizontalPodAutoscaler{
				hpa("web", "Deployment", "web"), hpa("api", "Deployment", "api"), hpa("front", "Deployment", "front"),
				hpa("db", "StatefulSet", "db"), hpa("gone", "Deployment", "gone"),
				hpa("queue", "Deployment", "api", testbuild.ExternalAverage("queue_depth", nil, 10000), testbuild.CPUUtilization(60)),
			},
			workloads: []runtime.Object{
				deployment("web", 2, app("web")), deployment("api", 1, app("api")),
				deployment("front", 3, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"front", "edge"}}}}),
				statefulSet("db", 1, app("db")),
			},
			pods: []pod{
				{"web-0", "450m", 30 * time.Second, []string{"app", "web", "tier", "front"}},
				{"web-1", "200m", 30 * time.Second, []string{"app", "web"}},
				{"api-0", "100m", 30 * time.Second, []string{"app", "api", "tier", "edge"}},
				{"db-0", "", 0, []string{"app", "db"}},
				{"other-0", "900m", 30 * time.Second, []string{"app", "other"}},
			},
			events: []*corev1.Event{rescale("web", 2, 3*time.Minute), rescale("api", 1, 2*time.Minute)},
		}
	}
	tests := []struct {
		name   string
		change func(*cluster)
	}{
		{name: "overlapping labels, a set-based selector, a StatefulSet, a pod without metrics and a target gone", change: func(*cluster) {}},
		{name: "a stale sample fails only the HPAs whose selector picks its pod", change: func(c *cluster) { c.pods[2].age = time.Hour }},
		{name: "a pod whose usage is read by no HPA changes nothing", change: func(c *cluster) { c.pods[4].usage = "5" }},
		{name: "the pod list forbidden fails every HPA's metrics alike", change: func(c *cluster) { c.reactor = forbidden("pods") }},
		{name: "the events list forbidden leaves each history reconstructed from status alone", change: func(c *cluster) { c.reactor = forbidden("events") }},
		{name: "the Deployments list forbidden falls back to each target's scale", change: func(c *cluster) { c.reactor = forbidden("deployments") }},
		{name: "the metrics API failing fails every resource metric alike", change: func(c *cluster) {
			c.metricsErr = apierrors.NewServiceUnavailable("the server is currently unable to handle the request")
		}},
	}
	cfg := replicas.DefaultConfig()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.change(&c)
			ctx := context.Background()
			opts := evaluation.Options{Now: now, Config: cfg}

			kube, scales, m := c.fakes(t)
			want := map[string]served{}
			liveSrc := live.Source(kube, scales, live.Pods{Client: kube}, m, cfg)
			for _, h := range c.hpas {
				ev, err := evaluation.Evaluate(ctx, liveSrc, ns, h.Name, opts)
				if err != nil {
					t.Fatal(err)
				}
				want[h.Name] = servedOf(ev)
			}

			kube, scales, m = c.fakes(t)
			c.externalReads.Store(0)
			src := batch.Read(ctx, batch.Clients{Kube: kube, Scales: scales, Metrics: m, Config: cfg}, ns, c.hpas)
			got := map[string]served{}
			for _, h := range c.hpas {
				ev, err := evaluation.Evaluate(ctx, src, ns, h.Name, opts)
				if err != nil {
					t.Fatal(err)
				}
				got[h.Name] = servedOf(ev)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("batched (+) and per-HPA (-) reads serve different inputs:\n%s", diff)
			}
			// External (and Object) metrics are the HPA's own: read per HPA, as live reads them.
			if n := c.externalReads.Load(); n != 1 {
				t.Errorf("the one External metric was read %d times, want once", n)
			}
		})
	}
}

func TestAnHPANotGivenIsNotFound(t *testing.T) {
	c := cluster{}
	kube, scales, m := c.fakes(t)
	src := batch.Read(context.Background(), batch.Clients{Kube: kube, Scales: scales, Metrics: m}, ns, nil)
	if _, err := src.HPA(context.Background(), ns, "web"); !apierrors.IsNotFound(err) {
		t.Errorf("got %v, want NotFound", err)
	}
}

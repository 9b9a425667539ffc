package cmdtest

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	fakescale "k8s.io/client-go/scale/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/live"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild/fakemetrics"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

// Now is the fixture's present.
var Now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// Fixture is a cluster of fakes, valid by default: HPA shop/web on Deployment web, four
// ready pods and their cpu metrics.
type Fixture struct {
	HPA        *autoscalingv2.HorizontalPodAutoscaler
	ExtraHPAs  []*autoscalingv2.HorizontalPodAutoscaler
	Pods       []*corev1.Pod
	Events     []*corev1.Event
	Namespaces []string
	Scale      *autoscalingv1.Scale
	ScaleErr   error
	// Served are the group/versions discovery reports (besides core and apps).
	Served []string
	VPAs   []*unstructured.Unstructured
	// ScaledObjects are KEDA's (served when Served lists keda.sh/v1alpha1).
	ScaledObjects []*unstructured.Unstructured
	M             *fakemetrics.Client
	// KubeReactor, when set, runs before the tracker (RBAC failures and such).
	KubeReactor clienttesting.ReactionFunc
	// MetricsErr, when set, is why no metrics source could be chosen.
	MetricsErr error
}

// NewFixture is the default fixture.
func NewFixture() *Fixture {
	f := &Fixture{
		HPA: testbuild.HPA("shop", "web", testbuild.UID("hpa-uid"), testbuild.Generation(1), testbuild.ResourceVersion("42"),
			testbuild.Target("apps/v1", "Deployment", "web"), testbuild.Min(1), testbuild.Max(10),
			testbuild.Metrics(testbuild.CPUUtilization(80)), testbuild.ObservedGeneration(1), testbuild.Replicas(4, 4)),
		Namespaces: []string{"shop"},
		Served:     []string{"metrics.k8s.io/v1beta1"},
		M: &fakemetrics.Client{Name: "metrics.k8s.io/v1beta1 (fake)", At: Now.Add(-30 * time.Second),
			Resource: map[corev1.ResourceName]fakemetrics.Values{}},
	}
	f.SetPods(4, "500m", "400m")
	return f
}

// SetPods makes n ready pods started an hour ago with the given cpu request and usage, and
// a scale of n replicas.
func (f *Fixture) SetPods(n int, request, usage string) {
	f.Pods = nil
	f.M.Resource[corev1.ResourceCPU] = fakemetrics.Values{}
	for i := range n {
		f.AddPod(fmt.Sprintf("web-%d", i), request, usage, true, time.Hour, "abc")
	}
	f.Scale = &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec:       autoscalingv1.ScaleSpec{Replicas: int32(n)},
		Status:     autoscalingv1.ScaleStatus{Replicas: int32(n), Selector: "app=web"},
	}
}

// AddPod adds a pod of the Deployment (pod-template-hash hash) started age ago, with a cpu
// request and usage ("" for none).
func (f *Fixture) AddPod(name, request, usage string, ready bool, age time.Duration, hash string) {
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	var requests corev1.ResourceList
	if request != "" {
		requests = testbuild.Requests("cpu", request)
	}
	f.Pods = append(f.Pods, testbuild.Pod("shop", name, testbuild.Labels("app", "web", "pod-template-hash", hash),
		testbuild.Containers(testbuild.Container("app", requests)),
		testbuild.StartedAt(Now.Add(-age)), testbuild.ReadySince(status, Now.Add(-age))))
	if usage != "" {
		q := resource.MustParse(usage)
		f.M.Resource[corev1.ResourceCPU][name] = sampleset.Sample{MilliValue: q.MilliValue(), Timestamp: sampleset.Timestamp(Now.Add(-30 * time.Second)), Window: 30 * time.Second}
	}
}

// RescaleEvent adds the SuccessfulRescale event of a rescale to size, ago ago.
func (f *Fixture) RescaleEvent(size int32, ago time.Duration) {
	f.Events = append(f.Events, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("web.%d", len(f.Events)), Namespace: "shop"},
		InvolvedObject: corev1.ObjectReference{Kind: "HorizontalPodAutoscaler", Name: "web", Namespace: "shop"},
		Type:           corev1.EventTypeNormal, Reason: "SuccessfulRescale", Count: 1,
		Message:        fmt.Sprintf("New size: %d; reason: cpu resource utilization (percentage of request) above target", size),
		FirstTimestamp: metav1.NewTime(Now.Add(-ago)), LastTimestamp: metav1.NewTime(Now.Add(-ago)),
	})
}

// Fakes are the fakes behind one run, kept for assertions.
type Fakes struct {
	Kube    *kubefake.Clientset
	Scale   *fakescale.FakeScaleClient
	Dynamic *dynamicfake.FakeDynamicClient
	M       *fakemetrics.Client
}

// Build makes the clients over fakes holding the fixture's objects.
func (f *Fixture) Build() (*cmdutil.Clients, *Fakes) {
	var objs []runtime.Object
	for _, ns := range f.Namespaces {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	if f.HPA != nil {
		objs = append(objs, f.HPA)
	}
	for _, h := range f.ExtraHPAs {
		objs = append(objs, h)
	}
	for _, p := range f.Pods {
		objs = append(objs, p)
	}
	for _, e := range f.Events {
		objs = append(objs, e)
	}
	if d := f.Deployment(); d != nil {
		objs = append(objs, d)
	}
	kube := kubefake.NewClientset(objs...)
	if f.KubeReactor != nil {
		kube.PrependReactor("*", "*", f.KubeReactor)
	}
	kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = f.discovery()
	sc, mapper := f.scales()
	var dynObjs []runtime.Object
	for _, v := range f.VPAs {
		dynObjs = append(dynObjs, v)
	}
	for _, o := range f.ScaledObjects {
		dynObjs = append(dynObjs, o)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{cmdutil.VPAResource: "VerticalPodAutoscalerList", cmdutil.ScaledObjectResource: "ScaledObjectList"}, dynObjs...)
	c := &cmdutil.Clients{
		Kube:      kube,
		Scales:    &live.ScaleClient{Scales: sc, Mapper: mapper},
		Pods:      live.Pods{Client: kube},
		Discovery: kube.Discovery(),
		Dynamic:   dyn,
	}
	return c, &Fakes{Kube: kube, Scale: sc, Dynamic: dyn, M: f.M}
}

// Deployment is the Deployment web whose scale Scale is (its pod template is the pods' of
// SetPods, a cpu request of 500m), which the lint rules read; none when the scale is NotFound.
func (f *Fixture) Deployment() *appsv1.Deployment {
	if f.Scale == nil || apierrors.IsNotFound(f.ScaleErr) {
		return nil
	}
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: f.Scale.Name, Namespace: f.Scale.Namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(f.Scale.Spec.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{testbuild.Container("app", testbuild.Requests("cpu", "500m"))}}},
		},
		Status: appsv1.DeploymentStatus{Replicas: f.Scale.Status.Replicas},
	}
}

// discovery is what the fake discovery serves: pods, Deployments with /scale, ConfigMaps
// without, and the Served group/versions.
func (f *Fixture) discovery() []*metav1.APIResourceList {
	resources := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod", Namespaced: true}, {Name: "configmaps", Kind: "ConfigMap", Namespaced: true}}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment", Namespaced: true},
			{Name: "deployments/scale", Kind: "Scale", Group: "autoscaling", Version: "v1", Namespaced: true},
		}},
	}
	for _, gv := range f.Served {
		resources = append(resources, &metav1.APIResourceList{GroupVersion: gv, APIResources: []metav1.APIResource{{Name: "pods", Kind: "PodMetrics", Namespaced: true}}})
	}
	return resources
}

// scales is the fake scale client answering with the fixture's Scale (or ScaleErr), and
// the REST mapper of Deployments and ConfigMaps.
func (f *Fixture) scales() (*fakescale.FakeScaleClient, meta.RESTMapper) {
	sc := &fakescale.FakeScaleClient{}
	sc.AddReactor("get", "deployments", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if f.ScaleErr != nil {
			return true, nil, f.ScaleErr
		}
		// Only the fixture's one Deployment exists.
		if g, ok := a.(clienttesting.GetAction); ok && g.GetName() != f.Scale.Name {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "apps", Resource: "deployments"}, g.GetName())
		}
		return true, f.Scale.DeepCopy(), nil
	})
	// A kind without /scale answers 404 from the API server, as here.
	sc.AddReactor("get", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewGenericServerResponse(404, "get", schema.GroupResource{Resource: "configmaps"}, "", "", 0, false)
	})
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: "apps", Version: "v1"}, {Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	return sc, mapper
}

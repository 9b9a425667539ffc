package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/scale"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/metrics"
)

// t0 is the fixtures' "now".
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const ns = "default"

// newHPA is a valid-by-default HPA: target Deployment "web", 1..10 replicas, cpu at 50%.
func newHPA(name string, mods ...func(*autoscalingv2.HorizontalPodAutoscaler)) *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Generation: 1, ResourceVersion: "1", UID: types.UID("uid-" + name)},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To[int32](1),
			MaxReplicas:    10,
			Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{
					Name:   corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)},
				},
			}},
		},
	}
	for _, m := range mods {
		m(h)
	}
	return h
}

func withTarget(name string) func(*autoscalingv2.HorizontalPodAutoscaler) {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.ScaleTargetRef.Name = name }
}

func withStatusManager(manager string, at time.Time) func(*autoscalingv2.HorizontalPodAutoscaler) {
	return func(h *autoscalingv2.HorizontalPodAutoscaler) {
		h.ManagedFields = append(h.ManagedFields, metav1.ManagedFieldsEntry{
			Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
			Time: &metav1.Time{Time: at}, APIVersion: "autoscaling/v2", FieldsType: "FieldsV1",
		})
	}
}

// newPod is a running, ready pod of app=<app> started 10 minutes before t0, one container
// requesting 100m cpu.
func newPod(name, app string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": app},
			Annotations: map[string]string{"note": strings.Repeat("x", 64)}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "registry.example/app:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		}}},
		Status: corev1.PodStatus{
			Phase:     corev1.PodRunning,
			StartTime: &metav1.Time{Time: t0.Add(-10 * time.Minute)},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.Time{Time: t0.Add(-9 * time.Minute)}}},
		},
	}
}

// fakeScales is a scale.ScalesGetter holding Deployment scales in memory. It records every
// call with its dry-run option and can fail the next updates with a conflict.
type fakeScales struct {
	mu        sync.Mutex
	scales    map[string]*autoscalingv1.Scale // namespace/name
	conflicts int
	// versions makes updates check and bump resource versions as the API server does.
	versions bool
	actions  []string
}

func newFakeScales(specByName map[string]int32) *fakeScales {
	f := &fakeScales{scales: map[string]*autoscalingv1.Scale{}}
	for name, n := range specByName {
		f.scales[ns+"/"+name] = &autoscalingv1.Scale{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, ResourceVersion: "1"},
			Spec:       autoscalingv1.ScaleSpec{Replicas: n},
			Status:     autoscalingv1.ScaleStatus{Replicas: n, Selector: "app=" + name},
		}
	}
	return f
}

func (f *fakeScales) Scales(namespace string) scale.ScaleInterface { return fakeScaleNS{f, namespace} }

func (f *fakeScales) recorded() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.actions)
}

type fakeScaleNS struct {
	f  *fakeScales
	ns string
}

func (s fakeScaleNS) Get(_ context.Context, gr schema.GroupResource, name string, _ metav1.GetOptions) (*autoscalingv1.Scale, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.actions = append(s.f.actions, fmt.Sprintf("get %s/scale %s", gr.Resource, name))
	sc, ok := s.f.scales[s.ns+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(gr, name)
	}
	return sc.DeepCopy(), nil
}

func (s fakeScaleNS) Update(_ context.Context, gr schema.GroupResource, sc *autoscalingv1.Scale, opts metav1.UpdateOptions) (*autoscalingv1.Scale, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.actions = append(s.f.actions, fmt.Sprintf("update %s/scale %s replicas=%d dryRun=%v", gr.Resource, sc.Name, sc.Spec.Replicas, opts.DryRun))
	if s.f.conflicts > 0 {
		s.f.conflicts--
		return nil, apierrors.NewConflict(gr, sc.Name, errors.New("the object has been modified"))
	}
	cur, ok := s.f.scales[s.ns+"/"+sc.Name]
	if !ok {
		return nil, apierrors.NewNotFound(gr, sc.Name)
	}
	if s.f.versions {
		if sc.ResourceVersion != "" && sc.ResourceVersion != cur.ResourceVersion {
			return nil, apierrors.NewConflict(gr, sc.Name, errors.New("the object has been modified"))
		}
		if len(opts.DryRun) == 0 {
			n, _ := strconv.Atoi(cur.ResourceVersion)
			cur.ResourceVersion = strconv.Itoa(n + 1)
		}
	}
	if len(opts.DryRun) == 0 {
		cur.Spec.Replicas = sc.Spec.Replicas
	}
	return cur.DeepCopy(), nil
}

func (s fakeScaleNS) Patch(context.Context, schema.GroupVersionResource, string, types.PatchType, []byte, metav1.PatchOptions) (*autoscalingv1.Scale, error) {
	return nil, errors.New("patch is not used by the controller")
}

// testMapper knows Deployments and a custom scalable kind, Widget (example.com/v1).
func testMapper() apimeta.RESTMapper {
	m := apimeta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: "apps", Version: "v1"}, {Group: "example.com", Version: "v1"}})
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, apimeta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, apimeta.RESTScopeNamespace)
	return m
}

// fakeMetrics serves cpu samples per pod name.
type fakeMetrics struct {
	cpu metrics.PodSamples
	// bySelector, when set, answers per pod selector instead of cpu (large fixtures).
	bySelector map[string]metrics.PodSamples
	err        error
}

func (m *fakeMetrics) PodResource(_ context.Context, _ string, res corev1.ResourceName, sel labels.Selector, _ string) (metrics.PodSamples, time.Time, error) {
	if m.err != nil {
		return nil, time.Time{}, m.err
	}
	if res != corev1.ResourceCPU {
		return nil, time.Time{}, fmt.Errorf("no %s metrics in this fixture", res)
	}
	if m.bySelector != nil {
		return maps(m.bySelector[sel.String()]), t0.Add(-10 * time.Second), nil
	}
	return maps(m.cpu), t0.Add(-10 * time.Second), nil
}

func maps(in metrics.PodSamples) metrics.PodSamples {
	out := make(metrics.PodSamples, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

func (m *fakeMetrics) PodsMetric(context.Context, string, string, labels.Selector, labels.Selector) (metrics.PodSamples, time.Time, error) {
	return nil, time.Time{}, errors.New("custom metrics are not served by this fixture")
}

func (m *fakeMetrics) ObjectMetric(context.Context, string, string, autoscalingv2.CrossVersionObjectReference, labels.Selector) (int64, time.Time, error) {
	return 0, time.Time{}, errors.New("object metrics are not served by this fixture")
}

func (m *fakeMetrics) ExternalMetric(context.Context, string, string, labels.Selector) ([]int64, time.Time, error) {
	return nil, time.Time{}, errors.New("external metrics are not served by this fixture")
}

func (m *fakeMetrics) Source() string { return "fixture" }

// cpuAt gives every named pod the same cpu usage in millicores.
func cpuAt(milli int64, pods ...string) metrics.PodSamples {
	out := metrics.PodSamples{}
	for _, p := range pods {
		out[p] = metrics.PodSample{MilliValue: milli, Timestamp: t0.Add(-10 * time.Second), Window: 30 * time.Second}
	}
	return out
}

// fixture is sample-controller's test fixture: objects in, one reconcile, API actions out.
type fixture struct {
	kube     *fake.Clientset
	scales   *fakeScales
	metrics  *fakeMetrics
	recorder *record.FakeRecorder
	clock    *testingclock.FakeClock
	c        *Controller
	reports  []Report
}

func newFixture(t testing.TB, opts Options, hpas []*autoscalingv2.HorizontalPodAutoscaler, pods []*corev1.Pod, scales map[string]int32, m *fakeMetrics) *fixture {
	var objs []runtime.Object
	for _, h := range hpas {
		objs = append(objs, h.DeepCopy())
	}
	for _, p := range pods {
		objs = append(objs, p.DeepCopy())
	}
	f := &fixture{
		kube:     fake.NewClientset(objs...),
		scales:   newFakeScales(scales),
		metrics:  m,
		recorder: record.NewFakeRecorder(100),
		clock:    testingclock.NewFakeClock(t0),
	}
	var mu sync.Mutex
	c, err := New(opts, Deps{
		Kube:     f.kube,
		Scales:   &ScaleClient{Scales: f.scales, Mapper: testMapper()},
		Metrics:  m,
		Recorder: f.recorder,
		Clock:    f.clock,
		Sink: func(r Report) {
			mu.Lock()
			defer mu.Unlock()
			f.reports = append(f.reports, r)
		},
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.c = c
	hpaIndexer := c.hpaFactory.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetIndexer()
	for _, h := range hpas {
		if err := hpaIndexer.Add(h.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		c.enqueue(h)
	}
	podIndexer := c.podFactory.Core().V1().Pods().Informer().GetIndexer()
	stripper := NewPodStripper()
	for _, p := range pods {
		stripped, _ := stripper.Transform(p.DeepCopy())
		if err := podIndexer.Add(stripped); err != nil {
			t.Fatal(err)
		}
	}
	f.kube.ClearActions()
	return f
}

// sync reconciles one HPA as a worker would.
func (f *fixture) sync(t *testing.T, name string) error {
	t.Helper()
	_, _, err := f.c.reconcileKey(context.Background(), ns+"/"+name)
	return err
}

// kubeActions renders the API calls made through the clientset.
func (f *fixture) kubeActions() []string {
	var out []string
	for _, a := range f.kube.Actions() {
		s := a.GetVerb() + " " + a.GetResource().Resource
		if sub := a.GetSubresource(); sub != "" {
			s += "/" + sub
		}
		if u, ok := a.(core.UpdateActionImpl); ok {
			s += fmt.Sprintf(" dryRun=%v", u.UpdateOptions.DryRun)
		}
		out = append(out, s)
	}
	return out
}

// events drains the recorder.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// storedHPA reads the HPA as the API server holds it.
func (f *fixture) storedHPA(t testing.TB, name string) *autoscalingv2.HorizontalPodAutoscaler {
	t.Helper()
	h, err := f.kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func condition(h *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) string {
	for _, c := range h.Status.Conditions {
		if c.Type == t {
			return fmt.Sprintf("%s/%s", c.Status, c.Reason)
		}
	}
	return "absent"
}

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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/scale"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/live"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild/fakemetrics"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
)

// t0 is the fixtures' "now".
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const ns = "default"

// newHPA is a valid-by-default HPA default/<name>: target Deployment "web", 1..10 replicas, cpu
// at 50%.
func newHPA(name string, opts ...testbuild.HPAOption) *autoscalingv2.HorizontalPodAutoscaler {
	return testbuild.HPA(ns, name, append([]testbuild.HPAOption{
		testbuild.Generation(1), testbuild.ResourceVersion("1"), testbuild.UID("uid-" + name),
		testbuild.Target("apps/v1", "Deployment", "web"), testbuild.Min(1), testbuild.Max(10),
		testbuild.Metrics(testbuild.CPUUtilization(50)),
	}, opts...)...)
}

// newPod is a running, ready pod of app=<app> started 10 minutes before t0, one container
// requesting 100m cpu.
func newPod(name, app string, opts ...testbuild.PodOption) *corev1.Pod {
	return testbuild.Pod(ns, name, append([]testbuild.PodOption{
		testbuild.Labels("app", app), testbuild.Annotations("note", strings.Repeat("x", 64)),
		testbuild.Containers(corev1.Container{Name: "app", Image: "registry.example/app:1",
			Resources: corev1.ResourceRequirements{Requests: testbuild.Requests("cpu", "100m")}}),
		testbuild.StartedAt(t0.Add(-10 * time.Minute)), testbuild.ReadySince(corev1.ConditionTrue, t0.Add(-9*time.Minute)),
	}, opts...)...)
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

// cpuMetrics is the fixtures' metrics client: s for cpu (nothing else), read 10 s before t0.
func cpuMetrics(s fakemetrics.Values) *fakemetrics.Client {
	return &fakemetrics.Client{Name: "fixture", At: t0.Add(-10 * time.Second), Resource: map[corev1.ResourceName]fakemetrics.Values{corev1.ResourceCPU: s}}
}

// failingMetrics fails every read with err.
func failingMetrics(err error) *fakemetrics.Client {
	return &fakemetrics.Client{Name: "fixture", Err: err}
}

// cpuAt gives every named pod the same cpu usage in millicores, sampled 10 s before t0 over 30 s.
func cpuAt(milli int64, pods ...string) fakemetrics.Values {
	return fakemetrics.Samples(milli, t0.Add(-10*time.Second), 30*time.Second, pods...)
}

// fixture is sample-controller's test fixture: objects in, one reconcile, API actions out.
type fixture struct {
	kube     *fake.Clientset
	scales   *fakeScales
	metrics  *fakemetrics.Client
	recorder *record.FakeRecorder
	clock    *testingclock.FakeClock
	c        *Controller
	reports  []Report
}

func newFixture(t testing.TB, opts Options, hpas []*autoscalingv2.HorizontalPodAutoscaler, pods []*corev1.Pod, scales map[string]int32, m *fakemetrics.Client) *fixture {
	f := newFixtureWith(t, opts, hpas, pods, scales, m, testingclock.NewFakeClock(t0))
	f.metrics = m
	return f
}

// newFixtureWith is newFixture over any metrics client, on clk.
func newFixtureWith(t testing.TB, opts Options, hpas []*autoscalingv2.HorizontalPodAutoscaler, pods []*corev1.Pod, scales map[string]int32, m metrics.Client, clk *testingclock.FakeClock) *fixture {
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
		recorder: record.NewFakeRecorder(100),
		clock:    clk,
	}
	var mu sync.Mutex
	c, err := New(opts, Deps{
		Kube:     f.kube,
		Scales:   &live.ScaleClient{Scales: f.scales, Mapper: testMapper()},
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
	podIndexer := c.pods.informer.GetIndexer()
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

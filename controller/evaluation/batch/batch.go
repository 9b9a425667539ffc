package batch

import (
	"context"
	"fmt"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// rescaleEvents selects, on the server, the events every HPA's reconstructed history is made
// of; history.EventReader picks each HPA's own.
const rescaleEvents = "involvedObject.kind=HorizontalPodAutoscaler,reason=SuccessfulRescale"

// Clients are what a namespace is read through.
type Clients struct {
	Kube kubernetes.Interface
	// Scales reads the scale subresource of the kinds not listed here (and of a listed kind
	// whose list failed).
	Scales evaluation.ScaleReader
	// Metrics reads the metrics; a metrics.NamespaceLister reads resource metrics once.
	Metrics evaluation.MetricsReader
	// Config is the controller configuration a recorded history is restored under.
	Config replicas.Config
	// Leases reads the leader Leases (kube-controller-manager's, kubectl hpa run's), each once
	// for every namespace.
	Leases *history.Leases
}

// Namespace is the evaluation.Source of one namespace's HPAs, read once by Read.
type Namespace struct {
	evaluation.MetricsReader
	evaluation.HistoryReader

	name      string
	hpas      map[string]*autoscalingv2.HorizontalPodAutoscaler
	pods      []*corev1.Pod
	podsErr   error
	workloads map[schema.GroupKind]*workloads
	scales    evaluation.ScaleReader
	resources *metrics.PodResources
	events    eventList

	// read keeps the scale-subresource reads of kinds not listed, so that OtherHPAs and the
	// HPA's own evaluation read each target once.
	mu   sync.Mutex
	read map[autoscalingv2.CrossVersionObjectReference]scaleRead

	selectorsOnce sync.Once
	selectors     map[string]labels.Selector
}

type scaleRead struct {
	scale *replicas.Scale
	err   error
}

var (
	_ evaluation.Source        = (*Namespace)(nil)
	_ evaluation.OverlapFinder = (*Namespace)(nil)
)

// workloads are one listed kind's objects and their scales by name, or why the list failed.
type workloads struct {
	resource schema.GroupResource
	objects  []runtime.Object
	scales   map[string]*replicas.Scale
	err      error
}

// Read reads namespace's inputs for hpas (the namespace's HPAs, as the caller listed them),
// every list at the same time: the pods, the events, the resource metrics when an HPA has a
// resource metric, and each kind the HPAs target among the listed ones. A failed list is not
// an error here: each HPA's evaluation meets it where live would have met its own read's.
func Read(ctx context.Context, c Clients, namespace string, hpas []*autoscalingv2.HorizontalPodAutoscaler) *Namespace {
	n := &Namespace{
		MetricsReader: c.Metrics,
		name:          namespace,
		hpas:          map[string]*autoscalingv2.HorizontalPodAutoscaler{},
		workloads:     map[schema.GroupKind]*workloads{},
		scales:        c.Scales,
	}
	n.HistoryReader = history.EventReader{Lister: &n.events, Leases: c.Leases, Config: c.Config}
	resourceMetrics := false
	for _, h := range hpas {
		n.hpas[h.Name] = h
		if gk, ok := listedKind(h.Spec.ScaleTargetRef); ok && n.workloads[gk] == nil {
			n.workloads[gk] = &workloads{resource: listedKinds[gk]}
		}
		for _, m := range h.Spec.Metrics {
			resourceMetrics = resourceMetrics || m.Type == autoscalingv2.ResourceMetricSourceType || m.Type == autoscalingv2.ContainerResourceMetricSourceType
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { n.pods, n.podsErr = listPods(ctx, c.Kube, namespace) })
	wg.Go(func() {
		n.events.rescales.list, n.events.rescales.err = c.Kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: rescaleEvents})
	})
	wg.Go(func() {
		n.events.resizes.list, n.events.resizes.err = c.Kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: history.ResizeEvents})
	})
	if l, ok := c.Metrics.(metrics.NamespaceLister); ok && resourceMetrics {
		wg.Go(func() { n.resources = l.NamespacePodResources(ctx, namespace) })
	}
	for gk, w := range n.workloads {
		wg.Go(func() {
			w.objects, w.err = ListWorkloads(ctx, c.Kube, namespace, gk)
			w.scales = scalesOf(w.objects)
		})
	}
	wg.Wait()
	return n
}

// HPA implements evaluation.HPAReader from the HPAs given to Read (a copy, the caller's).
func (n *Namespace) HPA(_ context.Context, namespace, name string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	h, ok := n.hpas[name]
	if !ok || namespace != n.name {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}, name)
	}
	return h.DeepCopy(), nil
}

// Scale implements evaluation.ScaleReader: a listed kind from its list, every other kind (and
// a listed kind whose list failed, e.g. forbidden) through the scale subresource.
func (n *Namespace) Scale(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference) (*replicas.Scale, error) {
	gk, ok := listedKind(ref)
	w := n.workloads[gk]
	if namespace != n.name {
		return n.scales.Scale(ctx, namespace, ref)
	}
	if !ok || w == nil || w.err != nil {
		return n.readScale(ctx, ref)
	}
	s, found := w.scales[ref.Name]
	if !found {
		return nil, &replicas.ScaleError{Stage: replicas.ScaleErrorGet, Err: apierrors.NewNotFound(w.resource, ref.Name)}
	}
	if s == nil {
		// A selector the registry could not render: the scale subresource reports its error.
		return n.readScale(ctx, ref)
	}
	cp := *s
	return &cp, nil
}

// readScale reads ref's scale subresource once; later calls get the same answer.
func (n *Namespace) readScale(ctx context.Context, ref autoscalingv2.CrossVersionObjectReference) (*replicas.Scale, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	r, ok := n.read[ref]
	if !ok {
		r.scale, r.err = n.scales.Scale(ctx, n.name, ref)
		if n.read == nil {
			n.read = map[autoscalingv2.CrossVersionObjectReference]scaleRead{}
		}
		n.read[ref] = r
	}
	if r.err != nil {
		return nil, r.err
	}
	cp := *r.scale
	return &cp, nil
}

// OtherHPAs implements evaluation.OverlapFinder: the namespace's other HPAs whose target's
// selector matches any of pods (evaluation.TargetSelectors, the targets read from Read's lists),
// as run's selector tracker finds them once every HPA has synced (upstream then scales none of
// them).
func (n *Namespace) OtherHPAs(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, _ labels.Selector, pods []*corev1.Pod) ([]string, error) {
	n.selectorsOnce.Do(func() {
		hpas := make([]*autoscalingv2.HorizontalPodAutoscaler, 0, len(n.hpas))
		for _, h := range n.hpas {
			hpas = append(hpas, h)
		}
		// Parsed once for the namespace rather than once per pair of HPAs.
		n.selectors = evaluation.TargetSelectors(ctx, n, n.name, hpas)
	})
	return evaluation.OtherHPAsSelecting(hpa, n.selectors, pods), nil
}

// Workloads are the objects of kind gk Read listed (it lists the kinds of listedKinds the
// HPAs target), and whether it listed that kind; err is why its list failed. Other readers of
// the namespace (lint's) take them from here rather than listing them again.
func (n *Namespace) Workloads(gk schema.GroupKind) (objects []runtime.Object, listed bool, err error) {
	w := n.workloads[gk]
	if w == nil {
		return nil, false, nil
	}
	return w.objects, true, w.err
}

// Pods implements evaluation.PodReader: the namespace's pods selector matches, as a list
// with that selector returns them.
func (n *Namespace) Pods(_ context.Context, namespace string, selector labels.Selector) ([]*corev1.Pod, error) {
	if n.podsErr != nil {
		return nil, fmt.Errorf("listing pods in %s matching %q: %w", namespace, selector.String(), n.podsErr)
	}
	out := make([]*corev1.Pod, 0, len(n.pods))
	for _, p := range n.pods {
		if selector.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out, nil
}

// PodResource implements evaluation.MetricsReader: from the namespace's PodMetrics list when
// it was read, else through the metrics client.
func (n *Namespace) PodResource(ctx context.Context, namespace string, res corev1.ResourceName, selector labels.Selector, container string) (*sampleset.Set, time.Time, error) {
	if n.resources == nil || namespace != n.name {
		return n.MetricsReader.PodResource(ctx, namespace, res, selector, container)
	}
	return n.resources.PodResource(res, selector, container)
}

// eventList is the namespace's rescale and resize events, each listed once, as a
// history.EventLister.
type eventList struct {
	rescales, resizes listed
}

type listed struct {
	list *corev1.EventList
	err  error
}

// ListEvents implements history.EventLister: the list of the reason opts select (EventReader
// keeps the HPA's own or the target's).
func (e *eventList) ListEvents(_ context.Context, _ string, opts metav1.ListOptions) (*corev1.EventList, error) {
	if opts.FieldSelector == history.ResizeEvents {
		return e.resizes.list, e.resizes.err
	}
	return e.rescales.list, e.rescales.err
}

// listedKinds are the kinds read by one list per namespace, as run's caches read them.
var listedKinds = map[schema.GroupKind]schema.GroupResource{
	{Group: "apps", Kind: "Deployment"}:        {Group: "apps", Resource: "deployments"},
	{Group: "apps", Kind: "ReplicaSet"}:        {Group: "apps", Resource: "replicasets"},
	{Group: "apps", Kind: "StatefulSet"}:       {Group: "apps", Resource: "statefulsets"},
	{Group: "", Kind: "ReplicationController"}: {Resource: "replicationcontrollers"},
}

func listedKind(ref autoscalingv2.CrossVersionObjectReference) (schema.GroupKind, bool) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return schema.GroupKind{}, false
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	_, ok := listedKinds[gk]
	return gk, ok
}

func listPods(ctx context.Context, kube kubernetes.Interface, namespace string) ([]*corev1.Pod, error) {
	list, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// ListWorkloads lists the namespace's objects of gk, one of the workload kinds a scale target
// usually is (Deployment, ReplicaSet, StatefulSet, ReplicationController).
func ListWorkloads(ctx context.Context, kube kubernetes.Interface, namespace string, gk schema.GroupKind) ([]runtime.Object, error) {
	var (
		list runtime.Object
		err  error
	)
	opts := metav1.ListOptions{}
	switch gk.Kind {
	case "Deployment":
		list, err = kube.AppsV1().Deployments(namespace).List(ctx, opts)
	case "ReplicaSet":
		list, err = kube.AppsV1().ReplicaSets(namespace).List(ctx, opts)
	case "StatefulSet":
		list, err = kube.AppsV1().StatefulSets(namespace).List(ctx, opts)
	case "ReplicationController":
		list, err = kube.CoreV1().ReplicationControllers(namespace).List(ctx, opts)
	default:
		return nil, fmt.Errorf("%s is not a listed kind", gk)
	}
	if err != nil {
		return nil, err
	}
	return meta.ExtractList(list)
}

// scalesOf keeps each object's scale as the registry reports it (nil for a selector it could
// not render), by name.
func scalesOf(objects []runtime.Object) map[string]*replicas.Scale {
	out := map[string]*replicas.Scale{}
	for _, obj := range objects {
		s, _ := evaluation.WorkloadScale(obj)
		out[obj.(metav1.Object).GetName()] = s
	}
	return out
}

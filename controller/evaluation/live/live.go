// Package live is the source of the one-shot commands (explain, simulate's starting point):
// every input of an evaluation read from the API server when it is asked for, the scale
// subresource of any scalable kind through ScaleClient (whose writes run uses too), and the
// HPAs' rescale events for a reconstructed history.
package live

import (
	"context"
	"errors"
	"fmt"
	"sync"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/util/retry"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history/annotation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// Source is the evaluation.Source of one-shot commands: every input read from the API server, the
// past the history a kubectl hpa run recorded on the HPA or, without one, reconstructed from
// the HPA's SuccessfulRescale events; cfg is the controller configuration decided under.
func Source(kube kubernetes.Interface, scales evaluation.ScaleReader, pods evaluation.PodReader, m evaluation.MetricsReader, cfg replicas.Config) evaluation.Readers {
	return evaluation.Readers{
		HPAReader:     HPAs{Client: kube},
		HistoryReader: EventReader(kube, cfg),
		ScaleReader:   scales,
		PodReader:     pods,
		MetricsReader: m,
	}
}

// EventReader reads the evidence of the cluster controller's memory from the API server (the
// HPAs' SuccessfulRescale events, the Deployments' resizes, the leader Leases of
// kube-controller-manager and kubectl hpa run), for a history inferred from it under cfg.
func EventReader(kube kubernetes.Interface, cfg replicas.Config) history.EventReader {
	return history.EventReader{Lister: EventLister{Client: kube}, Leases: Leases(kube), Config: cfg}
}

// Leases reads leader Leases from the API server, each once.
func Leases(kube kubernetes.Interface) *history.Leases {
	return &history.Leases{Get: func(ctx context.Context, namespace, name string) (*coordinationv1.Lease, error) {
		return kube.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
	}}
}

// EventLister lists events from the API server.
type EventLister struct {
	Client kubernetes.Interface
}

// ListEvents implements history.EventLister.
func (l EventLister) ListEvents(ctx context.Context, namespace string, opts metav1.ListOptions) (*corev1.EventList, error) {
	return l.Client.CoreV1().Events(namespace).List(ctx, opts)
}

// HPAs reads HPAs from the API server.
type HPAs struct {
	Client kubernetes.Interface
}

// HPA implements evaluation.HPAReader; the API error is returned as it is.
func (l HPAs) HPA(ctx context.Context, namespace, name string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	return l.Client.AutoscalingV2().HorizontalPodAutoscalers(namespace).Get(ctx, name, metav1.GetOptions{})
}

// ScaleClient reads and writes the scale subresource of any scalable kind the way the
// upstream controller does: parse the apiVersion, ask the REST mapper for every mapping of
// the kind, and use the first mapping whose scale GET succeeds (reporting the first error
// when none does).
type ScaleClient struct {
	Scales scale.ScalesGetter
	Mapper apimeta.RESTMapper
	// FieldManager names the writer of scale updates in managedFields.
	FieldManager string

	mu sync.Mutex
	// read is the scale read last per target, so that a write can be sent with the
	// resource version its decision was made from instead of reading the scale again.
	read map[scaleKey]readScale
}

type scaleKey struct {
	namespace string
	ref       autoscalingv2.CrossVersionObjectReference
}

// readScale is which resource answered a scale read, and the resource version it had.
type readScale struct {
	gr schema.GroupResource
	rv string
}

// NewScaleClient builds a ScaleClient from a REST config with a discovery-backed mapper
// that refreshes itself when it meets a kind it does not know.
func NewScaleClient(cfg *rest.Config) (*ScaleClient, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the discovery client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	sg, err := scale.NewForConfig(cfg, mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(dc))
	if err != nil {
		return nil, fmt.Errorf("creating the scale client: %w", err)
	}
	return &ScaleClient{Scales: sg, Mapper: mapper, FieldManager: annotation.FieldManager}, nil
}

// Scale implements ScaleReader. Errors are *replicas.ScaleError carrying upstream's own
// error (its text becomes the FailedGetScale event and condition message).
func (c *ScaleClient) Scale(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference) (*replicas.Scale, error) {
	s, _, err := c.get(ctx, namespace, ref)
	if err != nil {
		return nil, err
	}
	return &replicas.Scale{SpecReplicas: s.Spec.Replicas, StatusReplicas: s.Status.Replicas, Selector: s.Status.Selector}, nil
}

func (c *ScaleClient) get(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference) (*autoscalingv1.Scale, schema.GroupResource, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, schema.GroupResource{}, &replicas.ScaleError{Stage: replicas.ScaleErrorAPIVersion, Err: err}
	}
	mappings, err := c.Mapper.RESTMappings(schema.GroupKind{Group: gv.Group, Kind: ref.Kind})
	if err != nil {
		return nil, schema.GroupResource{}, &replicas.ScaleError{Stage: replicas.ScaleErrorMapping, Err: err}
	}
	var firstErr error
	for i, m := range mappings {
		gr := m.Resource.GroupResource()
		s, err := c.Scales.Scales(namespace).Get(ctx, gr, ref.Name, metav1.GetOptions{})
		if err == nil {
			c.remember(namespace, ref, gr, s.ResourceVersion)
			return s, gr, nil
		}
		if i == 0 {
			firstErr = err
		}
	}
	if firstErr == nil {
		firstErr = errors.New("unrecognized resource")
	}
	return nil, schema.GroupResource{}, &replicas.ScaleError{Stage: replicas.ScaleErrorGet, Err: firstErr}
}

// SetReplicas writes spec.replicas of the target's scale, re-reading the scale after a
// failed write and retrying on conflicts with client-go's default backoff, as upstream.
// dryRun is passed through to the API server (metav1.DryRunAll or nil).
func (c *ScaleClient) SetReplicas(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference, desired int32, dryRun []string) error {
	_, err := c.SetReplicasVersion(ctx, namespace, ref, desired, dryRun)
	return err
}

// SetReplicasVersion is SetReplicas returning the target's resource version after the write,
// so that a cache can tell whether it has seen the write yet. The write carries the resource
// version of the scale last read (Remember, or this client's own read), so it costs no read
// of its own; a conflict (the target changed since) re-reads the scale and writes again.
func (c *ScaleClient) SetReplicasVersion(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference, desired int32, dryRun []string) (string, error) {
	var (
		s  *autoscalingv1.Scale
		gr schema.GroupResource
	)
	if last, ok := c.lastRead(namespace, ref); ok {
		gr = last.gr
		s = &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: namespace, ResourceVersion: last.rv}}
	} else {
		var err error
		if s, gr, err = c.get(ctx, namespace, ref); err != nil {
			return "", err
		}
	}
	var rv string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s.Spec.Replicas = desired
		updated, err := c.Scales.Scales(namespace).Update(ctx, gr, s, metav1.UpdateOptions{DryRun: dryRun, FieldManager: c.FieldManager})
		if err == nil {
			rv = updated.ResourceVersion
			if len(dryRun) == 0 {
				c.remember(namespace, ref, gr, rv)
			}
			return nil
		}
		if latest, getErr := c.Scales.Scales(namespace).Get(ctx, gr, ref.Name, metav1.GetOptions{}); getErr == nil {
			s = latest
			c.remember(namespace, ref, gr, s.ResourceVersion)
		}
		return err
	})
	if err != nil {
		c.Forget(namespace, ref)
	}
	return rv, err
}

// Remember records that the scale of ref was read, from a cache, at resource version rv
// of resource gr (a scale subresource has its object's resource version).
func (c *ScaleClient) Remember(namespace string, ref autoscalingv2.CrossVersionObjectReference, gr schema.GroupResource, rv string) {
	c.remember(namespace, ref, gr, rv)
}

func (c *ScaleClient) remember(namespace string, ref autoscalingv2.CrossVersionObjectReference, gr schema.GroupResource, rv string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read == nil {
		c.read = map[scaleKey]readScale{}
	}
	c.read[scaleKey{namespace, ref}] = readScale{gr: gr, rv: rv}
}

// Forget drops what is remembered of ref's scale (its HPA is gone): the next write to it reads
// it first.
func (c *ScaleClient) Forget(namespace string, ref autoscalingv2.CrossVersionObjectReference) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.read, scaleKey{namespace, ref})
}

// ReadVersion is the resource version of ref's scale as last read or written, which the next
// write carries (ok is false when none is held, e.g. after Forget).
func (c *ScaleClient) ReadVersion(namespace string, ref autoscalingv2.CrossVersionObjectReference) (rv string, ok bool) {
	r, ok := c.lastRead(namespace, ref)
	return r.rv, ok
}

func (c *ScaleClient) lastRead(namespace string, ref autoscalingv2.CrossVersionObjectReference) (readScale, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.read[scaleKey{namespace, ref}]
	return r, ok && r.rv != ""
}

// Pods lists pods from the API server on every call (for one-shot commands).
type Pods struct {
	Client kubernetes.Interface
}

// Pods implements evaluation.PodReader.
func (l Pods) Pods(ctx context.Context, namespace string, selector labels.Selector) ([]*corev1.Pod, error) {
	list, err := l.Client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, fmt.Errorf("listing pods in %s matching %q: %w", namespace, selector.String(), err)
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// Overlaps is the evaluation.OverlapFinder of a one-shot command: the namespace's HPAs listed
// once, and the selectors of their targets read through Scales, as batch finds them from its
// lists (evaluation.TargetSelectors). A list that fails leaves the overlap unchecked rather
// than failing the decision: OtherHPAs then finds none, and HPAs returns the list's error for
// the caller to report.
type Overlaps struct {
	Kube kubernetes.Interface
	// Scales reads the other HPAs' targets' scales.
	Scales evaluation.ScaleReader

	once sync.Once
	hpas []*autoscalingv2.HorizontalPodAutoscaler
	err  error
}

var _ evaluation.OverlapFinder = (*Overlaps)(nil)

// HPAs lists namespace's HPAs, once: every later call returns the same list (or error).
func (o *Overlaps) HPAs(ctx context.Context, namespace string) ([]*autoscalingv2.HorizontalPodAutoscaler, error) {
	o.once.Do(func() {
		list, err := o.Kube.AutoscalingV2().HorizontalPodAutoscalers(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			o.err = fmt.Errorf("listing the horizontalpodautoscalers of namespace %q: %w", namespace, err)
			return
		}
		for i := range list.Items {
			o.hpas = append(o.hpas, &list.Items[i])
		}
	})
	return o.hpas, o.err
}

// OtherHPAs implements evaluation.OverlapFinder.
func (o *Overlaps) OtherHPAs(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, _ labels.Selector, pods []*corev1.Pod) ([]string, error) {
	all, err := o.HPAs(ctx, hpa.Namespace)
	if err != nil {
		return nil, nil //nolint:nilerr // unchecked, not failed: HPAs reports the error
	}
	others := make([]*autoscalingv2.HorizontalPodAutoscaler, 0, len(all))
	for _, h := range all {
		if h.Name != hpa.Name {
			others = append(others, h)
		}
	}
	return evaluation.OtherHPAsSelecting(hpa, evaluation.TargetSelectors(ctx, o.Scales, hpa.Namespace, others), pods), nil
}

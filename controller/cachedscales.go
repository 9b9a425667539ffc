package controller

import (
	"context"
	"sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// CachedScales is a ScaleTarget that reads the scale of Deployments, ReplicaSets,
// StatefulSets and ReplicationControllers from informer caches, so a steady-state sync
// sends no scale GET. Every other kind, an object the cache does not hold (yet), and a kind
// whose informer has not synced (for instance because listing it is forbidden) are read
// live. Writes always go to the live client: an update must not carry a cached, possibly
// stale resource version.
//
// An informer is started only once an HPA targets its kind, so a namespace full of
// ReplicaSets costs nothing when every HPA targets a Deployment.
//
// A cached object older than our own last scale write of it is not used either: the read is
// live until the informer has caught up. An informer can lag a write by a whole back-off
// (after the API server was away, its watch re-lists only after up to 30s), and a decision
// from the scale before our write would write the same rescale again, or count from a
// replica count that is gone.
type CachedScales struct {
	live    ScaleTarget
	factory informers.SharedInformerFactory

	mu sync.Mutex
	// stop is nil until Start: before that every read is live.
	stop   <-chan struct{}
	logger klog.Logger
	kinds  map[schema.GroupKind]*cachedKind
	// written is the resource version of our last scale write per target ("resource/ns/name")
	// until the target's informer has caught up with it.
	written map[string]string
}

// versionedScaleWriter is a ScaleTarget whose writes report the target's resource version
// after the write (ScaleClient); without it, cached reads are not held back after a write.
type versionedScaleWriter interface {
	SetReplicasVersion(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference, desired int32, dryRun []string) (string, error)
}

type cachedKind struct {
	resource    string
	newInformer func(informers.SharedInformerFactory) cache.SharedIndexInformer
	toScale     func(obj any) (*replicas.Scale, bool)
	informer    cache.SharedIndexInformer
	// forbidden is set once listing the kind was refused, so the refusal is logged once.
	forbidden atomic.Bool
}

// NewCachedScales serves the scales of the built-in kinds of namespace (metav1.NamespaceAll
// for all) from informers over kube, and everything else from live.
func NewCachedScales(kube kubernetes.Interface, namespace string, live ScaleTarget) *CachedScales {
	return &CachedScales{
		live:    live,
		written: map[string]string{},
		// Scales are read on every sync, so the caches need no resync of their own.
		factory: informers.NewSharedInformerFactoryWithOptions(kube, 0,
			informers.WithNamespace(namespace), informers.WithTransform(stripScaleSource)),
		kinds: map[schema.GroupKind]*cachedKind{
			{Group: "apps", Kind: "Deployment"}: {
				resource: "deployments.apps",
				newInformer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
					return f.Apps().V1().Deployments().Informer()
				},
				toScale: evaluation.WorkloadScale,
			},
			{Group: "apps", Kind: "ReplicaSet"}: {
				resource: "replicasets.apps",
				newInformer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
					return f.Apps().V1().ReplicaSets().Informer()
				},
				toScale: evaluation.WorkloadScale,
			},
			{Group: "apps", Kind: "StatefulSet"}: {
				resource: "statefulsets.apps",
				newInformer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
					return f.Apps().V1().StatefulSets().Informer()
				},
				toScale: evaluation.WorkloadScale,
			},
			{Group: "", Kind: "ReplicationController"}: {
				resource: "replicationcontrollers",
				newInformer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
					return f.Core().V1().ReplicationControllers().Informer()
				},
				toScale: evaluation.WorkloadScale,
			},
		},
	}
}

// Start lets reads start informers; they run until ctx is done.
func (c *CachedScales) Start(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stop = ctx.Done()
	c.logger = klog.FromContext(ctx)
}

// Shutdown waits for the started informers to stop.
func (c *CachedScales) Shutdown() { c.factory.Shutdown() }

// Scale implements ScaleReader.
func (c *CachedScales) Scale(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference) (*replicas.Scale, error) {
	if s, ok := c.cached(namespace, ref); ok {
		return s, nil
	}
	return c.live.Scale(ctx, namespace, ref)
}

// SetReplicas implements ScaleTarget with the live client, and holds cached reads of the
// target back until its informer has seen the write.
func (c *CachedScales) SetReplicas(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference, desired int32, dryRun []string) error {
	w, ok := c.live.(versionedScaleWriter)
	if !ok {
		return c.live.SetReplicas(ctx, namespace, ref, desired, dryRun)
	}
	rv, err := w.SetReplicasVersion(ctx, namespace, ref, desired, dryRun)
	if err != nil || len(dryRun) > 0 || rv == "" {
		return err
	}
	if k, ok := c.kind(ref); ok {
		c.mu.Lock()
		c.written[writtenKey(k, namespace, ref.Name)] = rv
		c.mu.Unlock()
	}
	return nil
}

func writtenKey(k *cachedKind, namespace, name string) string {
	return k.resource + "/" + namespace + "/" + name
}

// kind is the cached kind ref names, if any. Like the live read, only the group of
// apiVersion selects the kind.
func (c *CachedScales) kind(ref autoscalingv2.CrossVersionObjectReference) (*cachedKind, bool) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, false
	}
	k, ok := c.kinds[schema.GroupKind{Group: gv.Group, Kind: ref.Kind}]
	return k, ok
}

func (c *CachedScales) cached(namespace string, ref autoscalingv2.CrossVersionObjectReference) (*replicas.Scale, bool) {
	k, ok := c.kind(ref)
	if !ok {
		return nil, false
	}
	inf := c.informer(k)
	if inf == nil || !inf.HasSynced() {
		return nil, false
	}
	obj, exists, err := inf.GetIndexer().GetByKey(namespace + "/" + ref.Name)
	if err != nil || !exists {
		return nil, false
	}
	if !c.caughtUp(writtenKey(k, namespace, ref.Name), obj) {
		return nil, false
	}
	s, ok := k.toScale(obj)
	if !ok {
		return nil, false
	}
	// A scale write then carries the version this read saw, and needs no read of its own.
	if r, ok := c.live.(scaleRememberer); ok {
		if m, err := apimeta.Accessor(obj); err == nil {
			r.Remember(namespace, ref, schema.ParseGroupResource(k.resource), m.GetResourceVersion())
		}
	}
	return s, true
}

// scaleForgetter is a ScaleTarget that remembers something per target (ScaleClient) and is
// told when a target's HPA is gone.
type scaleForgetter interface {
	Forget(namespace string, ref autoscalingv2.CrossVersionObjectReference)
}

// Forget passes the deletion of ref's HPA on to the live client.
func (c *CachedScales) Forget(namespace string, ref autoscalingv2.CrossVersionObjectReference) {
	if f, ok := c.live.(scaleForgetter); ok {
		f.Forget(namespace, ref)
	}
}

// scaleRememberer is a ScaleTarget whose writes can carry the resource version of a scale
// read elsewhere (ScaleClient).
type scaleRememberer interface {
	Remember(namespace string, ref autoscalingv2.CrossVersionObjectReference, gr schema.GroupResource, rv string)
}

// caughtUp reports whether the cached obj is at least as new as our last write of it, and
// forgets the write once it is.
func (c *CachedScales) caughtUp(key string, obj any) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	wrote, ok := c.written[key]
	if !ok {
		return true
	}
	m, err := apimeta.Accessor(obj)
	if err != nil {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(m.GetResourceVersion(), wrote)
	if err != nil {
		// Versions that cannot be ordered: read live this once and trust the cache after.
		delete(c.written, key)
		return false
	}
	if cmp < 0 {
		c.logger.V(4).Info("The cached target is older than our last scale write; reading it live", "target", key, "cached", m.GetResourceVersion(), "written", wrote)
		return false
	}
	delete(c.written, key)
	return true
}

// informer returns k's informer, starting it on first use; nil before Start.
func (c *CachedScales) informer(k *cachedKind) cache.SharedIndexInformer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop == nil {
		return nil
	}
	if k.informer == nil {
		inf := k.newInformer(c.factory)
		logger := c.logger
		// Without permission to list, the informer never syncs and reads stay live; say so
		// once instead of logging every retry as an error.
		_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
			if !apierrors.IsForbidden(err) {
				cache.DefaultWatchErrorHandler(ctx, r, err)
				return
			}
			if k.forbidden.CompareAndSwap(false, true) {
				logger.V(1).Info("Cannot list the targets; reading their scales from the API server instead", "resource", k.resource, "err", err)
				return
			}
			logger.V(4).Info("Listing the targets is still forbidden", "resource", k.resource, "err", err)
		})
		k.informer = inf
		c.factory.Start(c.stop)
	}
	return k.informer
}

// stripScaleSource is an informer transform keeping only what a scale is made of.
// Tombstones pass through unchanged.
func stripScaleSource(obj any) (any, error) {
	meta := func(m metav1.ObjectMeta) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion}
	}
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &appsv1.Deployment{ObjectMeta: meta(o.ObjectMeta),
			Spec:   appsv1.DeploymentSpec{Replicas: o.Spec.Replicas, Selector: o.Spec.Selector},
			Status: appsv1.DeploymentStatus{Replicas: o.Status.Replicas}}, nil
	case *appsv1.ReplicaSet:
		return &appsv1.ReplicaSet{ObjectMeta: meta(o.ObjectMeta),
			Spec:   appsv1.ReplicaSetSpec{Replicas: o.Spec.Replicas, Selector: o.Spec.Selector},
			Status: appsv1.ReplicaSetStatus{Replicas: o.Status.Replicas}}, nil
	case *appsv1.StatefulSet:
		return &appsv1.StatefulSet{ObjectMeta: meta(o.ObjectMeta),
			Spec:   appsv1.StatefulSetSpec{Replicas: o.Spec.Replicas, Selector: o.Spec.Selector},
			Status: appsv1.StatefulSetStatus{Replicas: o.Status.Replicas}}, nil
	case *corev1.ReplicationController:
		return &corev1.ReplicationController{ObjectMeta: meta(o.ObjectMeta),
			Spec:   corev1.ReplicationControllerSpec{Replicas: o.Spec.Replicas, Selector: o.Spec.Selector},
			Status: corev1.ReplicationControllerStatus{Replicas: o.Status.Replicas}}, nil
	}
	return obj, nil
}

package controller

import (
	"context"
	"sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

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
type CachedScales struct {
	live    ScaleTarget
	factory informers.SharedInformerFactory

	mu sync.Mutex
	// stop is nil until Start: before that every read is live.
	stop   <-chan struct{}
	logger klog.Logger
	kinds  map[schema.GroupKind]*cachedKind
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
		live: live,
		// Scales are read on every sync, so the caches need no resync of their own.
		factory: informers.NewSharedInformerFactoryWithOptions(kube, 0,
			informers.WithNamespace(namespace), informers.WithTransform(stripScaleSource)),
		kinds: map[schema.GroupKind]*cachedKind{
			{Group: "apps", Kind: "Deployment"}: {
				resource: "deployments.apps",
				newInformer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
					return f.Apps().V1().Deployments().Informer()
				},
				toScale: func(obj any) (*replicas.Scale, bool) {
					d, ok := obj.(*appsv1.Deployment)
					if !ok {
						return nil, false
					}
					return labelSelectorScale(d.Spec.Replicas, d.Status.Replicas, d.Spec.Selector)
				},
			},
			{Group: "apps", Kind: "ReplicaSet"}: {
				resource: "replicasets.apps",
				newInformer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
					return f.Apps().V1().ReplicaSets().Informer()
				},
				toScale: func(obj any) (*replicas.Scale, bool) {
					rs, ok := obj.(*appsv1.ReplicaSet)
					if !ok {
						return nil, false
					}
					return labelSelectorScale(rs.Spec.Replicas, rs.Status.Replicas, rs.Spec.Selector)
				},
			},
			{Group: "apps", Kind: "StatefulSet"}: {
				resource: "statefulsets.apps",
				newInformer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
					return f.Apps().V1().StatefulSets().Informer()
				},
				toScale: func(obj any) (*replicas.Scale, bool) {
					ss, ok := obj.(*appsv1.StatefulSet)
					if !ok {
						return nil, false
					}
					return labelSelectorScale(ss.Spec.Replicas, ss.Status.Replicas, ss.Spec.Selector)
				},
			},
			{Group: "", Kind: "ReplicationController"}: {
				resource: "replicationcontrollers",
				newInformer: func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
					return f.Core().V1().ReplicationControllers().Informer()
				},
				toScale: func(obj any) (*replicas.Scale, bool) {
					rc, ok := obj.(*corev1.ReplicationController)
					if !ok {
						return nil, false
					}
					// The registry reports a ReplicationController's map selector this way.
					return &replicas.Scale{SpecReplicas: specReplicas(rc.Spec.Replicas), StatusReplicas: rc.Status.Replicas,
						Selector: labels.SelectorFromSet(rc.Spec.Selector).String()}, true
				},
			},
		},
	}
}

// labelSelectorScale is the scale the apps registry reports for a workload with a label
// selector: the selector rendered by LabelSelectorAsSelector. A selector the server could
// not render either is left to the live read, which reports the server's own error.
func labelSelectorScale(spec *int32, status int32, selector *metav1.LabelSelector) (*replicas.Scale, bool) {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, false
	}
	return &replicas.Scale{SpecReplicas: specReplicas(spec), StatusReplicas: status, Selector: sel.String()}, true
}

// specReplicas is spec.replicas as the API server defaults it.
func specReplicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
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

// SetReplicas implements ScaleTarget with the live client.
func (c *CachedScales) SetReplicas(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference, desired int32, dryRun []string) error {
	return c.live.SetReplicas(ctx, namespace, ref, desired, dryRun)
}

func (c *CachedScales) cached(namespace string, ref autoscalingv2.CrossVersionObjectReference) (*replicas.Scale, bool) {
	// Like the live read, only the group of apiVersion selects the kind.
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, false
	}
	k, ok := c.kinds[schema.GroupKind{Group: gv.Group, Kind: ref.Kind}]
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
	return k.toScale(obj)
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
				logger.Info("Cannot list the targets; reading their scales from the API server instead", "resource", k.resource, "err", err)
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

package evaluation

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// WorkloadScale is the scale subresource the API server reports for a Deployment, ReplicaSet,
// StatefulSet or ReplicationController, computed from the object itself, so that a reader
// holding the objects (run's caches, list's per-namespace lists) needs no scale GET. It is
// false for any other object, and for a label selector the server could not render either:
// the scale subresource's own read then reports the server's error.
func WorkloadScale(obj any) (*replicas.Scale, bool) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return labelSelectorScale(o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector)
	case *appsv1.ReplicaSet:
		return labelSelectorScale(o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector)
	case *appsv1.StatefulSet:
		return labelSelectorScale(o.Spec.Replicas, o.Status.Replicas, o.Spec.Selector)
	case *corev1.ReplicationController:
		// The registry reports a ReplicationController's map selector this way.
		return &replicas.Scale{SpecReplicas: specReplicas(o.Spec.Replicas), StatusReplicas: o.Status.Replicas,
			Selector: labels.SelectorFromSet(o.Spec.Selector).String()}, true
	}
	return nil, false
}

// labelSelectorScale is the scale the apps registry reports for a workload with a label
// selector: the selector rendered by LabelSelectorAsSelector.
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

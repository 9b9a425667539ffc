package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-hpa/kubectl-hpa/internal/selectors"
)

// labelPairIndex indexes pods by "namespace/key=value" for each of their labels, so a
// selector with an equality requirement reads only the pods that can match.
const labelPairIndex = "labelPair"

func podLabelPairs(obj any) ([]string, error) {
	pod, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	labels := pod.GetLabels()
	out := make([]string, 0, len(labels))
	for k, v := range labels {
		out = append(out, pod.GetNamespace()+"/"+k+"="+v)
	}
	return out, nil
}

// IndexedPods reads pods from an informer indexer that has the label-pair index: a selector
// with an equality (or single-value set) requirement costs the pods carrying that label,
// not every pod of the namespace, which matters with many HPAs in one namespace. The indexer
// holds pods as PodStripper keeps them, or whole.
type IndexedPods struct {
	Indexer cache.Indexer
}

// Pods implements PodReader.
func (p IndexedPods) Pods(_ context.Context, namespace string, selector labels.Selector) ([]*corev1.Pod, error) {
	var (
		objs []any
		err  error
	)
	switch key, value, whole, ok := selectors.Pinned(selector); {
	case ok:
		objs, err = p.Indexer.ByIndex(labelPairIndex, namespace+"/"+key+"="+value)
		// When that one requirement is the whole selector, the index entry is the match.
		if whole {
			selector = labels.Everything()
		}
	case namespace == metav1.NamespaceAll:
		objs = p.Indexer.List()
	default:
		objs, err = p.Indexer.ByIndex(cache.NamespaceIndex, namespace)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the pod cache: %w", err)
	}
	return wholePods(objs, selector), nil
}

// wholePods is the pods among objs that selector matches, whole: the stripped ones are made
// whole in one array (and their Ready conditions in another) rather than one allocation each,
// which cost a decision over 1,000 pods several times what deciding did.
func wholePods(objs []any, selector labels.Selector) []*corev1.Pod {
	everything := selector.Empty()
	out := make([]*corev1.Pod, 0, len(objs))
	stripped := make([]*cachedPod, 0, len(objs))
	ready := 0
	for _, o := range objs {
		m, ok := o.(metav1.Object)
		if !ok || !everything && !selector.Matches(labels.Set(m.GetLabels())) {
			continue
		}
		switch pod := o.(type) {
		case *cachedPod:
			stripped = append(stripped, pod)
			if pod.ready != "" {
				ready++
			}
		case *corev1.Pod:
			out = append(out, pod)
		}
	}
	pods := make([]corev1.Pod, len(stripped))
	conditions := make([]corev1.PodCondition, ready)
	for i, cp := range stripped {
		cp.into(&pods[i], &conditions)
		out = append(out, &pods[i])
	}
	return out
}

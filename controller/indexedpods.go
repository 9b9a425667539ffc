package controller

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/kubectl-hpa/kubectl-hpa/internal/selectors"
)

// labelPairIndex indexes pods by "namespace/key=value" for each of their labels, so a
// selector with an equality requirement reads only the pods that can match.
const labelPairIndex = "labelPair"

func podLabelPairs(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	out := make([]string, 0, len(pod.Labels))
	for k, v := range pod.Labels {
		out = append(out, pod.Namespace+"/"+k+"="+v)
	}
	return out, nil
}

// IndexedPods reads pods from an informer indexer that has the label-pair index: a selector
// with an equality (or single-value set) requirement costs the pods carrying that label,
// not every pod of the namespace, which matters with many HPAs in one namespace.
type IndexedPods struct {
	Indexer cache.Indexer
}

// Pods implements PodReader.
func (p IndexedPods) Pods(_ context.Context, namespace string, selector labels.Selector) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	if key, value, whole, ok := selectors.Pinned(selector); ok {
		objs, err := p.Indexer.ByIndex(labelPairIndex, namespace+"/"+key+"="+value)
		if err != nil {
			return nil, fmt.Errorf("reading the pod cache: %w", err)
		}
		out = make([]*corev1.Pod, 0, len(objs))
		for _, o := range objs {
			// When that one requirement is the whole selector, the index entry is the match.
			if pod, ok := o.(*corev1.Pod); ok && (whole || selector.Matches(labels.Set(pod.Labels))) {
				out = append(out, pod)
			}
		}
		return out, nil
	}
	err := cache.ListAllByNamespace(p.Indexer, namespace, selector, func(o any) {
		if pod, ok := o.(*corev1.Pod); ok {
			out = append(out, pod)
		}
	})
	return out, err
}

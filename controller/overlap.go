package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
)

// SelectorTracker remembers the target selector of every HPA the controller knows, as
// upstream's selector store does: an HPA is registered with a match-nothing selector when
// it is first seen and gets its real selector on its first reconcile, so overlaps are only
// found between HPAs that have reconciled at least once.
type SelectorTracker struct {
	mu  sync.RWMutex
	sel map[string]map[string]labels.Selector // namespace -> name -> selector
}

// NewSelectorTracker returns an empty tracker.
func NewSelectorTracker() *SelectorTracker {
	return &SelectorTracker{sel: map[string]map[string]labels.Selector{}}
}

// Register adds namespace/name with a match-nothing selector unless it is known already,
// and reports whether it was new.
func (t *SelectorTracker) Register(namespace, name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	ns := t.sel[namespace]
	if ns == nil {
		ns = map[string]labels.Selector{}
		t.sel[namespace] = ns
	}
	if _, ok := ns[name]; ok {
		return false
	}
	ns[name] = labels.Nothing()
	return true
}

// Forget removes namespace/name.
func (t *SelectorTracker) Forget(namespace, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.sel[namespace], name)
	if len(t.sel[namespace]) == 0 {
		delete(t.sel, namespace)
	}
}

// OtherHPAs implements OverlapFinder: it records hpa's selector (only if hpa is still
// registered) and returns, sorted, the other HPAs of the namespace whose selector matches
// at least one of pods.
func (t *SelectorTracker) OtherHPAs(_ context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, selector labels.Selector, pods []*corev1.Pod) ([]string, error) {
	t.mu.Lock()
	ns := t.sel[hpa.Namespace]
	if _, ok := ns[hpa.Name]; !ok {
		t.mu.Unlock()
		return nil, fmt.Errorf("HPA %s/%s was deleted during reconciliation", hpa.Namespace, hpa.Name)
	}
	ns[hpa.Name] = selector
	t.mu.Unlock()

	t.mu.RLock()
	defer t.mu.RUnlock()
	var others []string
	for name, sel := range t.sel[hpa.Namespace] {
		if name != hpa.Name && anyMatches(sel, pods) {
			others = append(others, hpa.Namespace+"/"+name)
		}
	}
	slices.Sort(others)
	return others, nil
}

func anyMatches(sel labels.Selector, pods []*corev1.Pod) bool {
	if sel.Empty() {
		// An empty selector would match everything; upstream's tracker never stores one
		// because a scale with an empty selector fails before registration.
		return false
	}
	for _, p := range pods {
		if sel.Matches(labels.Set(p.Labels)) {
			return true
		}
	}
	return false
}

// LiveOverlaps finds overlapping HPAs from live reads, for one-shot commands: it lists
// the namespace's HPAs and reads each other HPA's target selector. Unlike the running
// controller it also counts HPAs no controller has reconciled yet.
type LiveOverlaps struct {
	Client kubernetes.Interface
	Scales ScaleReader
}

// OtherHPAs implements OverlapFinder.
func (l LiveOverlaps) OtherHPAs(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, _ labels.Selector, pods []*corev1.Pod) ([]string, error) {
	list, err := l.Client.AutoscalingV2().HorizontalPodAutoscalers(hpa.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing HPAs in %s to check for overlapping selectors: %w", hpa.Namespace, err)
	}
	var others []string
	for i := range list.Items {
		other := &list.Items[i]
		if other.Name == hpa.Name {
			continue
		}
		s, err := l.Scales.Scale(ctx, other.Namespace, other.Spec.ScaleTargetRef)
		if err != nil || s.Selector == "" {
			continue // such an HPA never registers a selector upstream either
		}
		sel, err := labels.Parse(s.Selector)
		if err != nil {
			continue
		}
		if anyMatches(sel, pods) {
			others = append(others, other.Namespace+"/"+other.Name)
		}
	}
	slices.Sort(others)
	return others, nil
}

package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-hpa/kubectl-hpa/internal/selectors"
)

// SelectorTracker remembers the target selector of every HPA the controller knows, as
// upstream's selector store does: an HPA is registered with a match-nothing selector when
// it is first seen and gets its real selector on its first reconcile, so overlaps are only
// found between HPAs that have reconciled at least once.
//
// Selectors that pin a label to one value are indexed by that pair, so finding the HPAs
// that select a set of pods looks at the HPAs sharing a label with them rather than at
// every HPA of the namespace.
type SelectorTracker struct {
	mu sync.RWMutex
	ns map[string]*nsSelectors
}

type nsSelectors struct {
	sel    map[string]labels.Selector     // name -> selector
	pinned map[string]string              // name -> "key=value" it is indexed under
	byPair map[string]map[string]struct{} // "key=value" -> names
	scan   map[string]struct{}            // names whose selector pins nothing: checked always
}

// NewSelectorTracker returns an empty tracker.
func NewSelectorTracker() *SelectorTracker {
	return &SelectorTracker{ns: map[string]*nsSelectors{}}
}

// Register adds namespace/name with a match-nothing selector unless it is known already,
// and reports whether it was new.
func (t *SelectorTracker) Register(namespace, name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.ns[namespace]
	if n == nil {
		n = &nsSelectors{sel: map[string]labels.Selector{}, pinned: map[string]string{},
			byPair: map[string]map[string]struct{}{}, scan: map[string]struct{}{}}
		t.ns[namespace] = n
	}
	if _, ok := n.sel[name]; ok {
		return false
	}
	n.sel[name] = labels.Nothing()
	return true
}

// Forget removes namespace/name.
func (t *SelectorTracker) Forget(namespace, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.ns[namespace]
	if n == nil {
		return
	}
	n.unindex(name)
	delete(n.sel, name)
	if len(n.sel) == 0 {
		delete(t.ns, namespace)
	}
}

func (n *nsSelectors) unindex(name string) {
	if key, ok := n.pinned[name]; ok {
		delete(n.byPair[key], name)
		if len(n.byPair[key]) == 0 {
			delete(n.byPair, key)
		}
		delete(n.pinned, name)
	}
	delete(n.scan, name)
}

func (n *nsSelectors) put(name string, sel labels.Selector) {
	n.unindex(name)
	n.sel[name] = sel
	if key, value, _, ok := selectors.Pinned(sel); ok {
		key := key + "=" + value
		if n.byPair[key] == nil {
			n.byPair[key] = map[string]struct{}{}
		}
		n.byPair[key][name] = struct{}{}
		n.pinned[name] = key
		return
	}
	n.scan[name] = struct{}{}
}

// OtherHPAs implements OverlapFinder: it records hpa's selector (only if hpa is still
// registered) and returns, sorted, the other HPAs of the namespace whose selector matches
// at least one of pods.
func (t *SelectorTracker) OtherHPAs(_ context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, selector labels.Selector, pods []*corev1.Pod) ([]string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.ns[hpa.Namespace]
	if n == nil {
		return nil, fmt.Errorf("HPA %s/%s was deleted during reconciliation", hpa.Namespace, hpa.Name)
	}
	if _, ok := n.sel[hpa.Name]; !ok {
		return nil, fmt.Errorf("HPA %s/%s was deleted during reconciliation", hpa.Namespace, hpa.Name)
	}
	n.put(hpa.Name, selector)

	candidates := map[string]struct{}{}
	for name := range n.scan {
		candidates[name] = struct{}{}
	}
	for _, p := range pods {
		for k, v := range p.Labels {
			for name := range n.byPair[k+"="+v] {
				candidates[name] = struct{}{}
			}
		}
	}
	var others []string
	for name := range candidates {
		if name != hpa.Name && anyMatches(n.sel[name], pods) {
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

package controller

import (
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// namespaceOrder is the order in which the work queue hands out the HPAs that are due, under
// --metrics-reads=per-namespace: grouped by namespace, so that the syncs of a namespace's HPAs
// start together and share one PodMetrics list (sharedMetrics keeps a list for a second).
// Client-go's queue hands them out first in, first out, and they do not always come in
// grouped: the informer's first list (and every relist) arrives in a map's order, so at a
// start, or after the Lease is taken again, every sync of a pass could be in another
// namespace than the one before, each with a list of its own. At 5,000 HPAs in 50 namespaces
// that was one list of a thousand pods for every two or three syncs, until the HPAs settled
// on their namespaces' instants.
//
// A group is a namespace's keys that are due and not handed out yet; groups are handed out in
// the order they were started, each whole before the next. A key joins its namespace's group
// while that group has not started to be handed out; once it has, the key starts a new group
// at the end. So no key waits for keys that became due after it in another namespace, except
// those that joined a group already ahead of it, and a group never grows while it is handed
// out. The order changes when a sync starts, not what it decides.
//
// The queue calls it under its own lock: it keeps none.
type namespaceOrder struct {
	groups []*namespaceGroup
	// joinable is each namespace's group that has not started to be handed out.
	joinable map[string]*namespaceGroup
	n        int
}

type namespaceGroup struct {
	namespace string
	keys      []string
}

var _ workqueue.Queue[string] = (*namespaceOrder)(nil)

func newNamespaceOrder() *namespaceOrder {
	return &namespaceOrder{joinable: map[string]*namespaceGroup{}}
}

// Push adds a key that became due.
func (o *namespaceOrder) Push(key string) {
	// A key it cannot split (none is: they are the informer's) groups with those without a
	// namespace.
	ns, _, _ := cache.SplitMetaNamespaceKey(key)
	g, ok := o.joinable[ns]
	if !ok {
		g = &namespaceGroup{namespace: ns}
		o.groups = append(o.groups, g)
		o.joinable[ns] = g
	}
	g.keys = append(g.keys, key)
	o.n++
}

// Pop hands out the next key of the first group. The queue calls it only when Len is not 0.
func (o *namespaceOrder) Pop() string {
	g := o.groups[0]
	if o.joinable[g.namespace] == g {
		delete(o.joinable, g.namespace)
	}
	key := g.keys[0]
	g.keys[0] = ""
	g.keys = g.keys[1:]
	if len(g.keys) == 0 {
		o.groups[0] = nil
		o.groups = o.groups[1:]
	}
	o.n--
	return key
}

// Len is the number of keys due and not handed out.
func (o *namespaceOrder) Len() int { return o.n }

// Touch is called for a key added again while it is waiting: it keeps its place, as in
// client-go's queue.
func (*namespaceOrder) Touch(string) {}

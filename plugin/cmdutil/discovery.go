package cmdutil

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// serialDiscovery lets one caller at a time into kubectl's on-disk discovery cache. explain
// reads in parallel, and two goroutines that miss the cache together (the scale read's REST
// mapper and the served-groups check) make client-go encode the same cached object at once,
// a data race. Whoever waits then reads what the first one cached, so no request is added.
//
// The embedded interface is the context-free one on purpose: callers that want the
// WithContext methods (the REST mapper does) get client-go's adapter over these methods,
// so every path goes through the lock.
type serialDiscovery struct {
	discovery.CachedDiscoveryInterface
	mu sync.Mutex
}

func newSerialDiscovery(dc discovery.CachedDiscoveryInterface) *serialDiscovery {
	return &serialDiscovery{CachedDiscoveryInterface: dc}
}

func (d *serialDiscovery) ServerGroups() (*metav1.APIGroupList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.CachedDiscoveryInterface.ServerGroups()
}

func (d *serialDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.CachedDiscoveryInterface.ServerResourcesForGroupVersion(gv)
}

func (d *serialDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.CachedDiscoveryInterface.ServerGroupsAndResources()
}

func (d *serialDiscovery) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.CachedDiscoveryInterface.ServerPreferredResources()
}

func (d *serialDiscovery) ServerPreferredNamespacedResources() ([]*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.CachedDiscoveryInterface.ServerPreferredNamespacedResources()
}

func (d *serialDiscovery) Fresh() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.CachedDiscoveryInterface.Fresh()
}

func (d *serialDiscovery) Invalidate() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.CachedDiscoveryInterface.Invalidate()
}

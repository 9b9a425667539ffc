package replicas

import (
	"fmt"
	"reflect"
	"strings"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// podRequest is upstream's per-pod request for a utilization denominator, in milli-units:
// pod-level requests when the PodLevelResources gate is on, the pod sets them and no container
// is named; otherwise the named container's request, or the sum over containers and restartable
// init (sidecar) containers. It allocates nothing unless it fails.
func podRequest(pod *corev1.Pod, container string, res corev1.ResourceName, podLevelGate bool, memo *requestMemo) (int64, error) {
	if podLevelGate && container == "" && podLevelRequestsSet(pod) {
		q, ok := podLevelRequest(pod, res)
		if !ok {
			return 0, fmt.Errorf("missing pod-level request for %s in Pod %s", res, pod.Name)
		}
		return q.MilliValue(), nil
	}
	var total int64
	// Regular containers first, then sidecars, as upstream concatenates them; the early return
	// on a name match (even the empty name) is upstream's.
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		done, err := addContainerRequest(&total, c, container, res, pod.Name, memo)
		if err != nil || done {
			return total, err
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if !restartable(c) {
			continue
		}
		done, err := addContainerRequest(&total, c, container, res, pod.Name, memo)
		if err != nil || done {
			return total, err
		}
	}
	if container != "" {
		return 0, fmt.Errorf("container %s not found in Pod %s", container, pod.Name)
	}
	return total, nil
}

func addContainerRequest(total *int64, c *corev1.Container, container string, res corev1.ResourceName, podName string, memo *requestMemo) (done bool, err error) {
	if container == "" || container == c.Name {
		milli, ok := memo.lookup(c.Resources.Requests, res)
		if !ok {
			return false, fmt.Errorf("missing request for %s in container %s of Pod %s", res, c.Name, podName)
		}
		*total += milli
	}
	if container == c.Name {
		return true, nil
	}
	return false, nil
}

func restartable(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func supportedPodLevel(res corev1.ResourceName) bool {
	return res == corev1.ResourceCPU || res == corev1.ResourceMemory || strings.HasPrefix(string(res), corev1.ResourceHugePagesPrefix)
}

func podLevelRequestsSet(pod *corev1.Pod) bool {
	if pod.Spec.Resources == nil {
		return false
	}
	for name := range pod.Spec.Resources.Requests {
		if supportedPodLevel(name) {
			return true
		}
	}
	return false
}

// podLevelRequest is the one-resource view of component-helpers' PodRequests with default
// options: the container aggregate (sidecar formula), replaced by the pod-level value when the
// resource is a supported pod-level one, plus the pod overhead.
func podLevelRequest(pod *corev1.Pod, res corev1.ResourceName) (resource.Quantity, bool) {
	q, ok := aggregateContainerRequest(pod, res)
	if supportedPodLevel(res) {
		if v, set := pod.Spec.Resources.Requests[res]; set {
			q, ok = v.DeepCopy(), true
		}
	}
	if pod.Spec.Overhead != nil {
		if o, set := pod.Spec.Overhead[res]; set {
			if ok {
				q.Add(o)
			} else {
				q, ok = o.DeepCopy(), true
			}
		}
	}
	return q, ok
}

// aggregateContainerRequest sums containers and sidecars and takes the maximum with what any
// init container needs while it runs (itself plus the sidecars started before it).
func aggregateContainerRequest(pod *corev1.Pod, res corev1.ResourceName) (resource.Quantity, bool) {
	var sum, sidecars, initMax resource.Quantity
	var hasSum, hasSidecars, hasInit bool
	for i := range pod.Spec.Containers {
		if v, ok := pod.Spec.Containers[i].Resources.Requests[res]; ok {
			addTo(&sum, &hasSum, v)
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		v, ok := c.Resources.Requests[res]
		var use resource.Quantity
		var hasUse bool
		if restartable(c) {
			if ok {
				addTo(&sum, &hasSum, v)
				addTo(&sidecars, &hasSidecars, v)
			}
			use, hasUse = sidecars.DeepCopy(), hasSidecars
		} else {
			if ok {
				addTo(&use, &hasUse, v)
			}
			if hasSidecars {
				addTo(&use, &hasUse, sidecars)
			}
		}
		if hasUse && (!hasInit || use.Cmp(initMax) > 0) {
			initMax, hasInit = use.DeepCopy(), true
		}
	}
	if hasInit && (!hasSum || initMax.Cmp(sum) > 0) {
		sum, hasSum = initMax.DeepCopy(), true
	}
	return sum, hasSum
}

func addTo(acc *resource.Quantity, has *bool, v resource.Quantity) {
	if !*has {
		*acc, *has = v.DeepCopy(), true
		return
	}
	acc.Add(v)
}

// requestMemo remembers the last request map read for one resource. The pods of a workload
// often share one map (run's informer cache interns identical request maps), so comparing map
// identity replaces a hashed lookup and a Quantity conversion per container. Inputs are never
// mutated during a decision, so a map seen twice holds the same value. A nil memo just looks up.
type requestMemo struct {
	m     unsafe.Pointer
	milli int64
	ok    bool
}

func (r *requestMemo) lookup(list corev1.ResourceList, res corev1.ResourceName) (int64, bool) {
	if r == nil {
		q, ok := list[res]
		return q.MilliValue(), ok
	}
	p := reflect.ValueOf(list).UnsafePointer()
	if p != nil && p == r.m {
		return r.milli, r.ok
	}
	q, ok := list[res]
	r.m, r.milli, r.ok = p, q.MilliValue(), ok
	return r.milli, ok
}

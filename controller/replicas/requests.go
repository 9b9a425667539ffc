package replicas

import (
	"fmt"

	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// RequestError is why a pod has no request to divide its usage by: a container (or, with
// pod-level requests, the pod) without a request for the resource, or a named container the pod
// does not have. Its text is upstream's.
type RequestError struct {
	Pod      string
	Resource corev1.ResourceName
	// Container lacks the request, or is the named container that is not in the pod; empty when
	// the pod-level request is missing.
	Container string
	// NotFound: the named Container is not in the pod.
	NotFound bool
}

func (e *RequestError) Error() string {
	switch {
	case e.NotFound:
		return fmt.Sprintf("container %s not found in Pod %s", e.Container, e.Pod)
	case e.Container == "":
		return fmt.Sprintf("missing pod-level request for %s in Pod %s", e.Resource, e.Pod)
	}
	return fmt.Sprintf("missing request for %s in container %s of Pod %s", e.Resource, e.Container, e.Pod)
}

// PodRequest is the pod's request for res as upstream divides a utilization by, in
// milli-units: pod-level requests (plus overhead) when the PodLevelResources gate (podLevel) is
// on, the pod sets them and no container is named; otherwise the named container's request,
// or the sum over containers and restartable init (sidecar) containers. The error is a
// *RequestError. It allocates nothing unless it fails.
func PodRequest(pod *corev1.Pod, container string, res corev1.ResourceName, podLevel bool) (int64, error) {
	if podLevel && container == "" && podLevelRequestsSet(pod) {
		q, ok := podLevelRequest(pod, res)
		if !ok {
			return 0, &RequestError{Pod: pod.Name, Resource: res}
		}
		return q.MilliValue(), nil
	}
	var total int64
	// Regular containers first, then sidecars, as upstream concatenates them; the early return
	// on a name match (even the empty name) is upstream's.
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		done, err := addContainerRequest(&total, c, container, res, pod.Name)
		if err != nil || done {
			return total, err
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if !restartable(c) {
			continue
		}
		done, err := addContainerRequest(&total, c, container, res, pod.Name)
		if err != nil || done {
			return total, err
		}
	}
	if container != "" {
		return 0, &RequestError{Pod: pod.Name, Resource: res, Container: container, NotFound: true}
	}
	return total, nil
}

// requestMemo keeps the last request computed in one pass over the pods (one resource, one
// container name), keyed by the pod's container arrays. Pods whose Containers and
// InitContainers are the same arrays have the same request: the run command's pod cache hands
// out one array per distinct stripped container list (PodStripper), and the simulator's pods
// copy one template spec, so a pass over the pods of one ReplicaSet (sorted by name, hence
// adjacent) reads the containers of the first pod only. Pods with a pod-level resources field
// are computed each time.
type requestMemo struct {
	containers, init   *corev1.Container
	nContainers, nInit int
	value              int64
	ok                 bool
}

// request is PodRequest(pod, container, res, podLevel), from the memo when the pod shares the
// previous pod's container arrays.
func (m *requestMemo) request(pod *corev1.Pod, container string, res corev1.ResourceName, podLevel bool) (int64, error) {
	if pod.Spec.Resources != nil || len(pod.Spec.Containers) == 0 {
		return PodRequest(pod, container, res, podLevel)
	}
	c := &pod.Spec.Containers[0]
	var ic *corev1.Container
	if len(pod.Spec.InitContainers) > 0 {
		ic = &pod.Spec.InitContainers[0]
	}
	if m.ok && c == m.containers && ic == m.init && len(pod.Spec.Containers) == m.nContainers && len(pod.Spec.InitContainers) == m.nInit {
		return m.value, nil
	}
	v, err := PodRequest(pod, container, res, podLevel)
	if err != nil {
		m.ok = false
		return v, err
	}
	*m = requestMemo{containers: c, init: ic, nContainers: len(pod.Spec.Containers), nInit: len(pod.Spec.InitContainers), value: v, ok: true}
	return v, nil
}

func addContainerRequest(total *int64, c *corev1.Container, container string, res corev1.ResourceName, podName string) (done bool, err error) {
	if container == "" || container == c.Name {
		q, ok := c.Resources.Requests[res]
		if !ok {
			return false, &RequestError{Pod: podName, Resource: res, Container: c.Name}
		}
		*total += q.MilliValue()
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

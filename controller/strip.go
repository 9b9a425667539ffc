package controller

import (
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// internLimit bounds the intern tables; when one fills up it starts over, which only
// costs sharing (pods keep the maps they already point to).
const internLimit = 4096

// PodStripper is an informer transform that keeps only what the decision core and the
// selector tracker read from a pod: name, namespace, labels, resource version, deletion
// timestamp, phase, start time, the Ready condition, and container/init container names,
// requests and restart policy (plus pod-level requests and the pod overhead). Everything else
// (managed fields, annotations, images, env, volumes, container statuses, ...) is dropped.
// What it keeps is a cachedPod, not a corev1.Pod: see there why.
//
// Pods of one ReplicaSet carry equal label and request maps and equal stripped container
// lists; the stripper shares one read-only copy of each, which is a large part of what a
// stripped pod still weighs, and lets the core compute a request once for the pods sharing
// one container array.
// Cached objects are never mutated (listers hand out shared pointers), so sharing is safe.
type PodStripper struct {
	mu         sync.Mutex
	labels     map[string]map[string]string
	requests   map[string]corev1.ResourceList
	containers map[string][]corev1.Container
}

// NewPodStripper returns a stripper with empty intern tables.
func NewPodStripper() *PodStripper {
	return &PodStripper{labels: map[string]map[string]string{}, requests: map[string]corev1.ResourceList{}, containers: map[string][]corev1.Container{}}
}

// Transform implements cache.TransformFunc. Objects that are not pods (tombstones, and pods
// already stripped: client-go may hand a transform what it transformed) pass through unchanged.
func (s *PodStripper) Transform(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := &cachedPod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              pod.Name,
			Namespace:         pod.Namespace,
			ResourceVersion:   pod.ResourceVersion,
			Labels:            s.internLabels(pod.Labels),
			DeletionTimestamp: pod.DeletionTimestamp,
		},
		containers:     s.stripContainers(pod.Spec.Containers),
		initContainers: s.stripContainers(pod.Spec.InitContainers),
		phase:          pod.Status.Phase,
		startTime:      pod.Status.StartTime,
	}
	if pod.Spec.Resources != nil && len(pod.Spec.Resources.Requests) > 0 {
		out.requests, _ = s.internRequests(pod.Spec.Resources.Requests)
	}
	// The overhead (RuntimeClass) is added to pod-level requests.
	if len(pod.Spec.Overhead) > 0 {
		out.overhead, _ = s.internRequests(pod.Spec.Overhead)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			out.ready, out.readySince = c.Status, c.LastTransitionTime
			break
		}
	}
	return out, nil
}

// cachedPod is a pod as run's cache holds it: what PodStripper keeps, in a third of the
// memory of a corev1.Pod holding the same (a corev1.Pod weighs 1,240 bytes with every field
// empty, 62 MB at 50,000 pods). IndexedPods, the only reader of the cache, makes the pods it
// reads whole again (into), so the decision core reads the pods it always read. It is a
// metav1.Object (its ObjectMeta), which the informer's keys and indexes read.
type cachedPod struct {
	metav1.ObjectMeta
	containers, initContainers []corev1.Container
	// requests are the pod-level requests (nil when the pod has none), overhead its overhead.
	requests, overhead corev1.ResourceList
	phase              corev1.PodPhase
	startTime          *metav1.Time
	// ready is the Ready condition's status, "" without one.
	ready      corev1.ConditionStatus
	readySince metav1.Time
}

// into fills out, which must be empty, with the kept fields, sharing the cache's maps and
// container arrays (read only, as every cached object); its Ready condition, if it has one, is
// the first of conditions, which it then moves past.
func (p *cachedPod) into(out *corev1.Pod, conditions *[]corev1.PodCondition) {
	out.ObjectMeta = p.ObjectMeta
	out.Spec.Containers, out.Spec.InitContainers, out.Spec.Overhead = p.containers, p.initContainers, p.overhead
	if p.requests != nil {
		out.Spec.Resources = &corev1.ResourceRequirements{Requests: p.requests}
	}
	out.Status.Phase, out.Status.StartTime = p.phase, p.startTime
	if p.ready != "" {
		c := *conditions
		c[0] = corev1.PodCondition{Type: corev1.PodReady, Status: p.ready, LastTransitionTime: p.readySince}
		out.Status.Conditions, *conditions = c[:1:1], c[1:]
	}
}

func (s *PodStripper) stripContainers(in []corev1.Container) []corev1.Container {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(in))
	var b strings.Builder
	for i, c := range in {
		out[i] = corev1.Container{Name: c.Name, RestartPolicy: c.RestartPolicy}
		b.WriteString(c.Name)
		b.WriteByte(0)
		if c.RestartPolicy != nil {
			b.WriteString(string(*c.RestartPolicy))
		}
		b.WriteByte(0)
		if len(c.Resources.Requests) > 0 {
			var key string
			out[i].Resources.Requests, key = s.internRequests(c.Resources.Requests)
			b.WriteString(key)
		}
		b.WriteByte(1)
	}
	key := b.String()
	if shared, ok := s.containers[key]; ok {
		return shared
	}
	if len(s.containers) >= internLimit {
		clear(s.containers)
	}
	s.containers[key] = out
	return out
}

func (s *PodStripper) internLabels(in map[string]string) map[string]string {
	if len(in) == 0 {
		return nil
	}
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(in[k])
		b.WriteByte(0)
	}
	key := b.String()
	if m, ok := s.labels[key]; ok {
		return m
	}
	if len(s.labels) >= internLimit {
		clear(s.labels)
	}
	s.labels[key] = in
	return in
}

// internRequests returns the shared copy of in and the key it is interned under.
func (s *PodStripper) internRequests(in corev1.ResourceList) (corev1.ResourceList, string) {
	keys := make([]corev1.ResourceName, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		q := in[k]
		b.WriteString(string(k))
		b.WriteByte(0)
		b.WriteString(q.String())
		b.WriteByte(0)
	}
	key := b.String()
	if m, ok := s.requests[key]; ok {
		return m, key
	}
	if len(s.requests) >= internLimit {
		clear(s.requests)
	}
	s.requests[key] = in
	return in, key
}

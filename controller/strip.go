package controller

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// StripPod is an informer transform that keeps only what the decision core and the
// selector tracker read from a pod: identity and labels, deletion timestamp, phase, start
// time, the Ready condition, and container/init container names, requests and restart
// policy (plus pod-level requests). Everything else (managed fields, annotations, images,
// env, volumes, statuses of containers, ...) is dropped, which is most of a pod's size.
// Objects that are not pods (tombstones) pass through unchanged.
func StripPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              pod.Name,
			Namespace:         pod.Namespace,
			UID:               pod.UID,
			ResourceVersion:   pod.ResourceVersion,
			Labels:            pod.Labels,
			DeletionTimestamp: pod.DeletionTimestamp,
		},
		Spec: corev1.PodSpec{
			Containers:     stripContainers(pod.Spec.Containers),
			InitContainers: stripContainers(pod.Spec.InitContainers),
		},
		Status: corev1.PodStatus{
			Phase:     pod.Status.Phase,
			StartTime: pod.Status.StartTime,
		},
	}
	if pod.Spec.Resources != nil && len(pod.Spec.Resources.Requests) > 0 {
		out.Spec.Resources = &corev1.ResourceRequirements{Requests: pod.Spec.Resources.Requests}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			out.Status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status, LastTransitionTime: c.LastTransitionTime}}
			break
		}
	}
	return out, nil
}

func stripContainers(in []corev1.Container) []corev1.Container {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(in))
	for i, c := range in {
		out[i] = corev1.Container{Name: c.Name, RestartPolicy: c.RestartPolicy}
		if len(c.Resources.Requests) > 0 {
			out[i].Resources.Requests = c.Resources.Requests
		}
	}
	return out
}

var _ cache.TransformFunc = StripPod

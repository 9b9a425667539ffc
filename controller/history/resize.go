package history

import (
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
)

// SizeBefore is the size ref had before a rescale to size to at at, as the Deployment
// controller's events (Events.TargetEvents) say it: its resize of a ReplicaSet to that size
// nearest at, the one the rescale caused (within seconds, or later but before the next
// rescale, at next, when the Deployment controller was away). ok is false when they say
// nothing (ref is not a Deployment, no such event, a rollout splitting the resize); evidence
// names the event.
func SizeBefore(events []corev1.Event, ref autoscalingv2.CrossVersionObjectReference, at time.Time, to int32, next, now time.Time) (from int32, evidence string, ok bool) {
	return fromOf(rescale{at: at, to: to}, next, resizesOf(events, ref, now))
}

package history

import (
	"context"
	"fmt"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// EventLister lists a namespace's events matching opts: a client's
// CoreV1().Events(namespace).List (live.EventLister is one).
type EventLister interface {
	ListEvents(ctx context.Context, namespace string, opts metav1.ListOptions) (*corev1.EventList, error)
}

// EventReader reads an HPA's SuccessfulRescale events, the only trace of its past decisions
// the API keeps when the controller deciding it is another process.
type EventReader struct {
	Lister EventLister
	// Config is the controller configuration a recorded history is restored under.
	Config replicas.Config
}

// History reads the events; the field selector narrows the list on the server; the filter
// here keeps fakes and old servers honest.
func (l EventReader) History(ctx context.Context, namespace, name string) Known {
	list, err := l.Lister.ListEvents(ctx, namespace, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name=" + name + ",reason=SuccessfulRescale",
	})
	if err != nil {
		return Events{Err: err, Config: l.Config}
	}
	var out []corev1.Event
	for _, ev := range list.Items {
		if ev.InvolvedObject.Kind == "HorizontalPodAutoscaler" && ev.InvolvedObject.Name == name && ev.Reason == "SuccessfulRescale" {
			out = append(out, ev)
		}
	}
	return Events{Events: out, Config: l.Config}
}

// Events is the past visible in an HPA's SuccessfulRescale events (Err when they could
// not be listed: the history is then reconstructed from the HPA's status alone).
type Events struct {
	Events []corev1.Event
	Err    error
	// Config is the controller configuration a recorded history is restored under.
	Config replicas.Config
}

// History implements Known: the history a kubectl hpa run recorded on hpa when there is a
// usable one, else the reconstruction.
func (r Events) History(hpa *autoscalingv2.HorizontalPodAutoscaler, now time.Time) replicas.History {
	if rec, ok, err := r.Recorded(hpa, now); ok && err == nil {
		return rec.Restored.History
	}
	h, _ := r.Reconstruct(hpa, now)
	return h
}

// Recorded is the history a kubectl hpa run recorded on hpa, as that run would decide from it
// at now: its newest recommendation counts as made at every sync until now. ok is false
// without one; err says why one is not used.
func (r Events) Recorded(hpa *autoscalingv2.HorizontalPodAutoscaler, now time.Time) (Recorded, bool, error) {
	return ReadRecorded(hpa, r.Config, now, now)
}

// Reconstruct rebuilds what can be known of the cluster controller's in-memory history, and
// says how: each visible SuccessfulRescale is a moment the controller settled on a size.
// Raw recommendations between rescales are not visible and are not invented.
func (r Events) Reconstruct(hpa *autoscalingv2.HorizontalPodAutoscaler, now time.Time) (replicas.History, string) {
	seen := sizesOf(r, now)

	h := replicas.History{Recommendations: []replicas.Recommendation{}}
	for _, s := range seen {
		h.Recommendations = append(h.Recommendations, replicas.Recommendation{Replicas: s.size, Timestamp: s.at})
	}
	fromLastScale := false
	if lst := hpa.Status.LastScaleTime; lst != nil && (len(seen) == 0 || lst.Time.Sub(seen[len(seen)-1].at) > time.Second) {
		// A rescale whose event has expired or was not visible: its size is the one the
		// controller has seen since (status.currentReplicas), the best available estimate.
		h.Recommendations = append(h.Recommendations, replicas.Recommendation{Replicas: hpa.Status.CurrentReplicas, Timestamp: lst.Time})
		fromLastScale = true
	}
	if hpa.Spec.Behavior != nil {
		// Upstream records scale events only with behavior; the first visible rescale's
		// previous size is unknown, so only changes between visible rescales count.
		for i := 1; i < len(seen); i++ {
			change := seen[i].size - seen[i-1].size
			switch {
			case change > 0:
				h.ScaleUpEvents = append(h.ScaleUpEvents, replicas.ScaleEvent{ReplicaChange: change, Timestamp: seen[i].at})
			case change < 0:
				h.ScaleDownEvents = append(h.ScaleDownEvents, replicas.ScaleEvent{ReplicaChange: -change, Timestamp: seen[i].at})
			}
		}
	}
	var b strings.Builder
	b.WriteString("The cluster's HPA controller keeps its recommendation history in its own memory; it cannot be read from the API. ")
	switch {
	case len(seen) == 0 && !fromLastScale:
		b.WriteString("No rescale is visible (no SuccessfulRescale events, no status.lastScaleTime), so this decision uses an empty history: nothing holds it back except what it computes now.")
	default:
		fmt.Fprintf(&b, "This decision uses what can be reconstructed: %d SuccessfulRescale event(s)", len(seen))
		if fromLastScale {
			b.WriteString(" and status.lastScaleTime (with status.currentReplicas as its size)")
		}
		b.WriteString(" as recommendations")
		if hpa.Spec.Behavior != nil && len(seen) > 1 {
			b.WriteString(", and the changes between them as scale events for the policies")
		}
		b.WriteString(". Recommendations made between rescales are not visible, so the cluster's stabilization window may hold a different value.")
	}
	return h, b.String()
}

// EventTime is the latest time an event was seen.
func EventTime(ev corev1.Event) time.Time {
	switch {
	case ev.Series != nil && !ev.Series.LastObservedTime.IsZero():
		return ev.Series.LastObservedTime.Time
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.FirstTimestamp.Time
}

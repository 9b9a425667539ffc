package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
)

// LiveSource is the Source of one-shot commands: every input read from the API server, the
// past the history a kubectl hpa run recorded on the HPA or, without one, reconstructed from
// the HPA's SuccessfulRescale events; cfg is the controller configuration decided under.
func LiveSource(kube kubernetes.Interface, scales ScaleReader, pods PodReader, m metrics.Client, cfg replicas.Config) Readers {
	return Readers{
		HPAReader:   LiveHPAs{Client: kube},
		PastReader:  LiveRescales{Client: kube, Config: cfg},
		ScaleReader: scales,
		PodReader:   pods,
		Client:      m,
	}
}

// LiveHPAs reads HPAs from the API server.
type LiveHPAs struct {
	Client kubernetes.Interface
}

// HPA implements HPAReader; the API error is returned as it is.
func (l LiveHPAs) HPA(ctx context.Context, namespace, name string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	return l.Client.AutoscalingV2().HorizontalPodAutoscalers(namespace).Get(ctx, name, metav1.GetOptions{})
}

// LiveRescales reads an HPA's SuccessfulRescale events, the only trace of its past decisions
// the API keeps when the controller deciding it is another process.
type LiveRescales struct {
	Client kubernetes.Interface
	// Config is the controller configuration a recorded history is restored under.
	Config replicas.Config
}

// Past implements PastReader. The field selector narrows the list on the server; the filter
// here keeps fakes and old servers honest.
func (l LiveRescales) Past(ctx context.Context, namespace, name string) Past {
	list, err := l.Client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name=" + name + ",reason=SuccessfulRescale",
	})
	if err != nil {
		return Rescales{Err: err, Config: l.Config}
	}
	var out []corev1.Event
	for _, ev := range list.Items {
		if ev.InvolvedObject.Kind == "HorizontalPodAutoscaler" && ev.InvolvedObject.Name == name && ev.Reason == "SuccessfulRescale" {
			out = append(out, ev)
		}
	}
	return Rescales{Events: out, Config: l.Config}
}

// Rescales is the past visible in an HPA's SuccessfulRescale events (Err when they could
// not be listed: the history is then reconstructed from the HPA's status alone).
type Rescales struct {
	Events []corev1.Event
	Err    error
	// Config is the controller configuration a recorded history is restored under.
	Config replicas.Config
}

// History implements Past: the history a kubectl hpa run recorded on hpa when there is a
// usable one, else the reconstruction.
func (r Rescales) History(hpa *autoscalingv2.HorizontalPodAutoscaler, now time.Time) replicas.History {
	if rec, ok, err := r.Recorded(hpa, now); ok && err == nil {
		return rec.Restored.History
	}
	h, _ := r.Reconstruct(hpa, now)
	return h
}

// Recorded is the history a kubectl hpa run recorded on hpa, as that run would decide from it
// at now: its newest recommendation counts as made at every sync until now. ok is false
// without one; err says why one is not used.
func (r Rescales) Recorded(hpa *autoscalingv2.HorizontalPodAutoscaler, now time.Time) (Recorded, bool, error) {
	return RecordedHistory(hpa, r.Config, now, now)
}

// Reconstruct rebuilds what can be known of the cluster controller's in-memory history, and
// says how: each visible SuccessfulRescale is a moment the controller settled on a size.
// Raw recommendations between rescales are not visible and are not invented.
func (r Rescales) Reconstruct(hpa *autoscalingv2.HorizontalPodAutoscaler, now time.Time) (replicas.History, string) {
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

// eventTime is the latest time an event was seen.
func eventTime(ev corev1.Event) time.Time {
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

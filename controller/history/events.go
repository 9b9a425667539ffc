package history

import (
	"context"
	"sync"
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

// EventReader reads the evidence of an HPA's past decisions the API keeps when the controller
// deciding it is another process: the HPA's SuccessfulRescale events, the Deployment
// controller's resizes of the namespace's ReplicaSets (the sizes the rescales came from), and
// the leader Leases (who decides it, and when its memory began).
type EventReader struct {
	Lister EventLister
	// Leases reads the leader Leases (kube-controller-manager's, kubectl hpa run's), each once
	// for every HPA; nil reads none.
	Leases *Leases
	// Config is the controller configuration a recorded history is restored under.
	Config replicas.Config
}

// History reads the events and the Lease at once; the field selectors narrow the lists on the
// server; the filters here keep fakes and old servers honest.
func (l EventReader) History(ctx context.Context, namespace, name string) Known {
	out := Events{Config: l.Config}
	var wg sync.WaitGroup
	wg.Go(func() {
		list, err := l.Lister.ListEvents(ctx, namespace, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=HorizontalPodAutoscaler,involvedObject.name=" + name + ",reason=SuccessfulRescale",
		})
		if err != nil {
			out.Err = err
			return
		}
		for _, ev := range list.Items {
			if ev.InvolvedObject.Kind == "HorizontalPodAutoscaler" && ev.InvolvedObject.Name == name && ev.Reason == "SuccessfulRescale" {
				out.Events = append(out.Events, ev)
			}
		}
	})
	wg.Go(func() {
		list, err := l.Lister.ListEvents(ctx, namespace, metav1.ListOptions{FieldSelector: ResizeEvents})
		if err != nil {
			out.TargetErr = err
			return
		}
		out.TargetEvents = list.Items
	})
	if l.Leases != nil {
		out.LeaderRead = true
		wg.Go(func() { out.Leader, out.LeaderErr = l.Leases.Leader(ctx, LeaderLeaseNamespace, LeaderLeaseName) })
		wg.Go(func() { out.Runs, out.RunErr = l.Leases.Runs(ctx, namespace) })
	}
	wg.Wait()
	return out
}

// Events is the past visible in an HPA's SuccessfulRescale events (Err when they could not be
// listed: the history is then reconstructed from the HPA's status alone), the namespace's
// ReplicaSet resizes (TargetEvents, TargetErr), kube-controller-manager's leader (LeaderRead
// when its Lease was asked for; Leader nil when none is kept, LeaderErr when it could not be
// read) and the Leases a kubectl hpa run deciding the namespace would hold (Runs, RunErr).
type Events struct {
	Events       []corev1.Event
	Err          error
	TargetEvents []corev1.Event
	TargetErr    error
	LeaderRead   bool
	Leader       *Leader
	LeaderErr    error
	Runs         []*Leader
	RunErr       error
	// Config is the controller configuration a recorded history is restored under.
	Config replicas.Config
}

var _ InputDependent = Events{}

// History implements Known: the history a kubectl hpa run recorded on hpa when there is a
// usable one, else the inference, with status.currentReplicas for the size now.
func (r Events) History(hpa *autoscalingv2.HorizontalPodAutoscaler, now time.Time) replicas.History {
	if rec, ok, err := r.Recorded(hpa, now); ok && err == nil {
		return rec.Restored.History
	}
	return r.Infer(hpa, nil, now).History
}

// HistoryFor implements InputDependent: History with the target's size now, which a seed holds
// when no rescale came since.
func (r Events) HistoryFor(_ context.Context, in replicas.Input) replicas.History {
	if rec, ok, err := r.Recorded(in.HPA, in.Now); ok && err == nil {
		return rec.Restored.History
	}
	return r.Infer(in.HPA, in.Scale, in.Now).History
}

// Recorded is the history a kubectl hpa run recorded on hpa, as that run would decide from it
// at now: its newest recommendation counts as made at every sync until now. ok is false
// without one; err says why one is not used.
func (r Events) Recorded(hpa *autoscalingv2.HorizontalPodAutoscaler, now time.Time) (Recorded, bool, error) {
	return ReadRecorded(hpa, r.Config, now, now)
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

package history

import (
	"context"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// Known is an HPA's decision history as a source knows it: run's memory, the rescale events
// explain reconstructs from, the record run persisted, a Prometheus replay.
type Known interface {
	// History is the core's History for hpa (as read) at now.
	History(hpa *autoscalingv2.HorizontalPodAutoscaler, now time.Time) replicas.History
}

// InputDependent is a Known whose history depends on the gathered input (the pods, the scale
// and the live metrics' timestamps): a replay of metric history. The evaluation asks it once
// the input is gathered, and decides with what it returns.
type InputDependent interface {
	Known
	HistoryFor(ctx context.Context, in replicas.Input) replicas.History
}

// Kept is a history its holder kept itself (run's memory, a simulation's state).
type Kept replicas.History

// History implements Known.
func (k Kept) History(*autoscalingv2.HorizontalPodAutoscaler, time.Time) replicas.History {
	return replicas.History(k)
}

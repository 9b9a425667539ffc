package replicas

import (
	"fmt"
	"slices"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// StatusWriteFailed is the reconcile error when the status write failed, in upstream's words
// (horizontal.go's updateStatus): the controller's, and a replay's of a recorded failure.
func StatusWriteFailed(hpaName string, err error) error {
	return fmt.Errorf("failed to update status for %s: %w", hpaName, err)
}

// Apply is what upstream's reconcileAutoscaler does after the scale write: scaleWriteErr is
// the write's result (ignored when d.Rescale is false). It builds the new status exactly as
// upstream's setStatus and condition merging do, the post-write events, the history with the
// new scale event, and the reconcile error. It never mutates in or d. The outcome's history
// shares d.History's slices except the one a scale event is stored in (a copy): the core changes
// no history in place, and Decide copies the one it is given, so the controller, which keeps the
// outcome's history for the next sync, needs no copy of its own (it would cost one per sync).
// Likewise the outcome's conditions are in's own slice when they come out unchanged (most
// syncs), and a copy otherwise.
func Apply(in Input, d Decision, scaleWriteErr error) Outcome {
	out := Outcome{History: d.History, Err: d.Err}
	if in.HPA == nil {
		return out
	}
	hpa := in.HPA
	old := hpa.Status
	// The conditions are merged in a scratch copy on the stack (settled keeps the old ones
	// when they come out the same): a decision sets AbleToScale twice, which leaves it as it
	// was at most syncs.
	var scratch [8]autoscalingv2.HorizontalPodAutoscalerCondition
	conds := append(scratch[:0], old.Conditions...)
	for _, c := range d.Conditions {
		conds = mergeCondition(conds, c, in.Now)
	}
	for _, t := range d.RemovedConditions {
		conds = removeCondition(conds, t)
	}

	var statuses []autoscalingv2.MetricStatus
	if d.Metrics != nil {
		statuses = make([]autoscalingv2.MetricStatus, len(d.Metrics))
		for i := range d.Metrics {
			d.Metrics[i].Status.DeepCopyInto(&statuses[i])
		}
	}
	newStatus := func(desired int32, rescaled bool) autoscalingv2.HorizontalPodAutoscalerStatus {
		s := autoscalingv2.HorizontalPodAutoscalerStatus{
			CurrentReplicas: d.CurrentReplicas,
			DesiredReplicas: desired,
			LastScaleTime:   old.LastScaleTime.DeepCopy(),
			CurrentMetrics:  statuses,
			Conditions:      settled(old.Conditions, conds),
		}
		if in.Config.HPAGeneration {
			s.ObservedGeneration = ptr.To(hpa.Generation)
		}
		if rescaled {
			s.LastScaleTime = &metav1.Time{Time: in.Now}
		}
		return s
	}

	switch {
	case d.Phase == PhaseScaleFailed:
		// Only the condition changes; upstream does not rebuild the status here.
		s := *old.DeepCopy()
		s.Conditions = settled(old.Conditions, conds)
		out.Status = s
	case d.Phase == PhaseMetricsFailed:
		out.Status = newStatus(old.DesiredReplicas, false)
	case d.Rescale && scaleWriteErr != nil:
		out.Events = append(out.Events, Event{Type: corev1.EventTypeWarning, Reason: "FailedRescale",
			Message: fmt.Sprintf("New size: %d; reason: %s; error: %v", d.DesiredReplicas, d.Reason, scaleWriteErr.Error())})
		conds = mergeCondition(conds, Condition{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionFalse, Reason: "FailedUpdateScale",
			Message: fmt.Sprintf("the HPA controller was unable to update the target scale: %v", scaleWriteErr)}, in.Now)
		out.Status = newStatus(old.DesiredReplicas, false)
		out.Err = fmt.Errorf("failed to rescale %s: %w", d.Reference, scaleWriteErr)
	case d.Rescale:
		conds = mergeCondition(conds, Condition{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "SucceededRescale",
			Message: fmt.Sprintf("the HPA controller was able to update the target scale to %d", d.DesiredReplicas)}, in.Now)
		out.Events = append(out.Events, Event{Type: corev1.EventTypeNormal, Reason: "SuccessfulRescale",
			Message: fmt.Sprintf("New size: %d; reason: %s", d.DesiredReplicas, d.Reason)})
		out.History = storeScaleEvent(out.History, EffectiveBehavior(hpa, in.Config), d.CurrentReplicas, d.DesiredReplicas, in.Now)
		if in.Config.ScaleToZero {
			z := scaleToZeroState(hpa, in.Config)
			if d.CurrentReplicas > 0 && d.DesiredReplicas == 0 && d.MinReplicas == 0 && z.hasObjectOrExternal {
				conds = mergeCondition(conds, Condition{Type: autoscalingv2.ScaledToZero, Status: corev1.ConditionTrue, Reason: "ScaledToZero",
					Message: "the HPA controller scaled the workload to zero"}, in.Now)
			} else {
				conds = mergeCondition(conds, Condition{Type: autoscalingv2.ScaledToZero, Status: corev1.ConditionFalse, Reason: "NotScaledToZero",
					Message: "the HPA controller did not scale the workload to zero"}, in.Now)
			}
		} else {
			conds = removeCondition(conds, autoscalingv2.ScaledToZero)
		}
		out.Status = newStatus(d.DesiredReplicas, true)
	default:
		out.Status = newStatus(d.CurrentReplicas, false)
	}
	out.StatusChanged = !statusEqual(&old, &out.Status)
	return out
}

// settled is the new status's conditions: old itself when merged (old with every merge and
// removal applied) is the same, a copy of merged otherwise. Copying them at every sync was
// the simulator's largest allocation.
func settled(old, merged []autoscalingv2.HorizontalPodAutoscalerCondition) []autoscalingv2.HorizontalPodAutoscalerCondition {
	if slices.Equal(old, merged) {
		return old
	}
	return slices.Clone(merged)
}

// mergeCondition is upstream's setConditionInList: update the first condition of the type (or
// append one), moving lastTransitionTime only when the status changes.
func mergeCondition(list []autoscalingv2.HorizontalPodAutoscalerCondition, c Condition, now time.Time) []autoscalingv2.HorizontalPodAutoscalerCondition {
	idx := -1
	for i := range list {
		if list[i].Type == c.Type {
			idx = i
			break
		}
	}
	if idx < 0 {
		list = append(list, autoscalingv2.HorizontalPodAutoscalerCondition{Type: c.Type})
		idx = len(list) - 1
	}
	existing := &list[idx]
	if existing.Status != c.Status {
		existing.LastTransitionTime = metav1.Time{Time: now}
	}
	existing.Status = c.Status
	existing.Reason = c.Reason
	existing.Message = c.Message
	return list
}

func removeCondition(list []autoscalingv2.HorizontalPodAutoscalerCondition, t autoscalingv2.HorizontalPodAutoscalerConditionType) []autoscalingv2.HorizontalPodAutoscalerCondition {
	if list == nil {
		return nil
	}
	filtered := list[:0]
	for _, c := range list {
		if c.Type != t {
			filtered = append(filtered, c)
		}
	}
	return filtered
}

// storeScaleEvent is upstream's storeScaleEvent: only with a behavior, in the direction of the
// change, marking events older than the direction's longest policy period outdated and reusing
// the last outdated slot.
func storeScaleEvent(h History, b *autoscalingv2.HorizontalPodAutoscalerBehavior, prev, next int32, now time.Time) History {
	if b == nil {
		return h
	}
	rules, events, change := b.ScaleDown, h.ScaleDownEvents, prev-next
	if next > prev {
		rules, events, change = b.ScaleUp, h.ScaleUpEvents, next-prev
	}
	var longest int32
	for _, p := range rules.Policies {
		longest = max(longest, p.PeriodSeconds)
	}
	cutoff := now.Add(-seconds(longest))
	events = cloneSlice(events)
	slot := -1
	for i := range events {
		if events[i].Timestamp.Before(cutoff) {
			events[i].Outdated = true
		}
		if events[i].Outdated {
			slot = i
		}
	}
	ev := ScaleEvent{ReplicaChange: change, Timestamp: now}
	if slot >= 0 {
		events[slot] = ev
	} else {
		events = append(events, ev)
	}
	if next > prev {
		h.ScaleUpEvents = events
	} else {
		h.ScaleDownEvents = events
	}
	return h
}

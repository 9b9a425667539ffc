package timeline

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/live"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history/annotation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

// readHPA gets the HPA, its failure made actionable.
func (o *Options) readHPA(ctx context.Context, c *cmdutil.Clients) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	hpa, err := c.Kube.AutoscalingV2().HorizontalPodAutoscalers(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
	if err != nil {
		return nil, cmdutil.HPAGetError(ctx, c.Kube, c.Host, o.Namespace, o.ExplicitNamespace, o.Name, err)
	}
	return hpa, nil
}

// fromEvents is the coarse timeline: the rescales the HPA's SuccessfulRescale events show in
// [now-since, now] (and the size before the first from the one before the period), the
// status now, and what kubectl hpa run persisted on the HPA, said in a note.
func (o *Options) fromEvents(ctx context.Context, c *cmdutil.Clients, now time.Time) (*v1alpha1.Timeline, error) {
	hpa, err := o.readHPA(ctx, c)
	if err != nil {
		return nil, err
	}
	known, _ := live.EventReader(c.Kube, o.Config).History(ctx, o.Namespace, o.Name).(history.Events)
	if known.Err != nil {
		return nil, cmdutil.APIExitError(fmt.Sprintf("listing the events of horizontalpodautoscaler %q in namespace %q", o.Name, o.Namespace), known.Err)
	}
	from := now.Add(-o.Since)
	src := v1alpha1.TimelineSource{Kind: v1alpha1.TimelineEvents, Name: "SuccessfulRescale events and status"}
	t := newTimeline(hpa, from, now, src)
	t.Rescales = rescalesFromEvents(known, hpa.Spec.ScaleTargetRef, from, now)
	if len(t.Rescales) == 0 {
		if err := nothingKnown(hpa, from, o.Since); err != nil {
			return nil, err
		}
	}
	t.Source.Notes = append(t.Source.Notes, "the API server keeps events for an hour by default (kube-apiserver --event-ttl): older rescales are not visible")
	if known.TargetErr != nil {
		t.Source.Notes = append(t.Source.Notes, "the Deployment controller's events could not be listed, so a rescale's old size is the previous rescale's or unknown: "+known.TargetErr.Error())
	}
	if rec, ok, err := history.ReadRecorded(hpa, o.Config, now, now); ok && err == nil {
		t.Source.Notes = append(t.Source.Notes, fmt.Sprintf("kubectl hpa run decides this HPA (its history in the annotation %s was written at %s): run --record FILE keeps every sync, for timeline --record",
			annotation.Key, rec.Record.At.UTC().Format(time.RFC3339)))
	}
	// A point at the start with the size then, one per rescale, one now with the status.
	if start, ok := sizeAt(t.Rescales, hpa, from); ok {
		t.Syncs = append(t.Syncs, v1alpha1.TimelineSync{Time: metav1.NewTime(from.UTC()), Replicas: start, Desired: start})
	}
	for _, r := range t.Rescales {
		s := v1alpha1.TimelineSync{Time: r.Time, Replicas: v1alpha1.UnknownReplicas, Desired: r.To, Rescale: true, Reason: r.Cause}
		if r.From != nil {
			s.Replicas = *r.From
		}
		t.Syncs = append(t.Syncs, s)
	}
	t.Syncs = append(t.Syncs, v1alpha1.TimelineSync{Time: metav1.NewTime(now.UTC()), Replicas: hpa.Status.CurrentReplicas,
		Desired: hpa.Status.DesiredReplicas, Constraint: constraintOfStatus(hpa.Status.Conditions)})
	return t, nil
}

// nothingKnown is the error for a period of which neither events nor status say anything:
// without status.lastScaleTime the replicas may have changed at any time.
func nothingKnown(hpa *autoscalingv2.HorizontalPodAutoscaler, from time.Time, since time.Duration) error {
	if lst := hpa.Status.LastScaleTime; lst != nil && !lst.After(from) {
		return nil // no rescale since before the period: the size held throughout
	}
	return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf(
		"nothing is known of horizontalpodautoscaler %s/%s's last %s: no SuccessfulRescale event (the API server keeps them an hour by default) and no status.lastScaleTime before the period; "+
			"give --prometheus-url to replay its metrics, or --record FILE from kubectl hpa run --record", hpa.Namespace, hpa.Name, since)}
}

// rescalesFromEvents are the rescales in [from, to] the HPA's events show, oldest first, each
// from the size the evidence says the target ref had before, as explain's memory takes it: the
// Deployment controller's resize of a ReplicaSet to the new size at the rescale, else the size
// the previous event set; unknown without either (the first of the events, whose target had
// replicas all the same).
func rescalesFromEvents(known history.Events, ref autoscalingv2.CrossVersionObjectReference, from, to time.Time) []v1alpha1.TimelineRescale {
	type seen struct {
		at     time.Time
		size   int32
		reason string
	}
	var all []seen
	for _, ev := range known.Events {
		var n int32
		if _, err := fmt.Sscanf(ev.Message, "New size: %d;", &n); err != nil {
			continue
		}
		_, reason, _ := strings.Cut(ev.Message, "reason: ")
		all = append(all, seen{history.EventTime(ev), n, reason})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].at.Before(all[j].at) })
	out := []v1alpha1.TimelineRescale{}
	for i, s := range all {
		if s.at.Before(from) || s.at.After(to) {
			continue
		}
		r := v1alpha1.TimelineRescale{Time: metav1.NewTime(s.at.UTC()), To: s.size, Cause: s.reason, Direction: "down"}
		if strings.Contains(s.reason, "above") {
			r.Direction = "up"
		}
		var next time.Time
		if i+1 < len(all) {
			next = all[i+1].at
		}
		if prev, _, ok := history.SizeBefore(known.TargetEvents, ref, s.at, s.size, next, to); ok {
			r.From, r.Direction = &prev, direction(prev, s.size)
		} else if i > 0 {
			prev := all[i-1].size
			r.From, r.Direction = &prev, direction(prev, s.size)
		}
		out = append(out, r)
	}
	return out
}

// sizeAt is the target's size at from: the size the last rescale before it set, or the
// first rescale's previous size, or, without a rescale since, the status' current replicas.
func sizeAt(rescales []v1alpha1.TimelineRescale, hpa *autoscalingv2.HorizontalPodAutoscaler, from time.Time) (int32, bool) {
	if len(rescales) > 0 {
		if rescales[0].From != nil {
			return *rescales[0].From, true
		}
		return 0, false
	}
	if lst := hpa.Status.LastScaleTime; lst != nil && !lst.After(from) {
		return hpa.Status.CurrentReplicas, true
	}
	return 0, false
}

// constraintOfStatus is what the conditions the controller last wrote say held the count,
// in ConstraintOf's names; empty when they say nothing (the tolerance is not written).
func constraintOfStatus(conds []autoscalingv2.HorizontalPodAutoscalerCondition) string {
	byType := map[autoscalingv2.HorizontalPodAutoscalerConditionType]autoscalingv2.HorizontalPodAutoscalerCondition{}
	for _, c := range conds {
		byType[c.Type] = c
	}
	if c, ok := byType[autoscalingv2.AbleToScale]; ok && c.Status == corev1.ConditionFalse {
		return string(replicas.ConstraintScaleUnavailable)
	}
	if c, ok := byType[autoscalingv2.ScalingActive]; ok && c.Status == corev1.ConditionFalse {
		switch c.Reason {
		case "InvalidSelector", "AmbiguousSelector":
			return string(replicas.ConstraintSelector)
		case "ScalingDisabled":
			return string(replicas.ConstraintScalingDisabled)
		}
		return string(replicas.ConstraintMetricsUnavailable)
	}
	if c, ok := byType[autoscalingv2.ScalingLimited]; ok && c.Status == corev1.ConditionTrue {
		switch c.Reason {
		case "TooManyReplicas":
			return string(replicas.ConstraintMaxReplicas)
		case "TooFewReplicas":
			return string(replicas.ConstraintMinReplicas)
		case "ScaleUpLimit":
			return string(replicas.ConstraintScaleUpLimit)
		case "ScaleDownLimit":
			return string(replicas.ConstraintScaleDownLimit)
		}
	}
	if c, ok := byType[autoscalingv2.AbleToScale]; ok {
		switch c.Reason {
		case "ScaleUpStabilized":
			return string(replicas.ConstraintScaleUpStabilization)
		case "ScaleDownStabilized":
			return string(replicas.ConstraintScaleDownStabilization)
		}
	}
	return ""
}

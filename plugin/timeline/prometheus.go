package timeline

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-hpa/kubectl-hpa/controller/history"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

// fromPrometheus is the timeline replayed from Prometheus over [now-since, now]: the HPA, its
// target's scale and pods read now, the metrics of the period from Prometheus, every sync
// decided by the core (history.ReplayPeriod).
func (o *Options) fromPrometheus(ctx context.Context, c *cmdutil.Clients, now time.Time) (*v1alpha1.Timeline, error) {
	hpa, err := o.readHPA(ctx, c)
	if err != nil {
		return nil, err
	}
	scale, err := c.Scales.Scale(ctx, hpa.Namespace, hpa.Spec.ScaleTargetRef)
	if err != nil {
		return nil, cmdutil.TargetExitError(hpa, err, c.Discovery)
	}
	sel, err := labels.Parse(scale.Selector)
	if err != nil {
		return nil, &cmdutil.ExitError{Code: cmdutil.ExitCannotCompute, Err: fmt.Errorf("the selector %q of %s %q does not parse: %w", scale.Selector, hpa.Spec.ScaleTargetRef.Kind, hpa.Spec.ScaleTargetRef.Name, err)}
	}
	pods, err := c.Pods.Pods(ctx, hpa.Namespace, sel)
	if err != nil {
		return nil, cmdutil.APIExitError(fmt.Sprintf("listing the pods of %s %q", hpa.Spec.ScaleTargetRef.Kind, hpa.Spec.ScaleTargetRef.Name), err)
	}
	in := replicas.Input{HPA: hpa, Scale: scale, Pods: pods, Now: now, Config: o.Config}
	rp, err := history.ReplayPeriod(ctx, o.prom, in, now.Add(-o.Since), o.SyncPeriod)
	if err != nil {
		return nil, &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("replaying %s/%s from Prometheus %s: %w", hpa.Namespace, hpa.Name, o.prom.Address(), err)}
	}
	src := v1alpha1.TimelineSource{Kind: v1alpha1.TimelinePrometheus, Name: rp.Source, Queries: rp.Queries, Notes: rp.Notes,
		Grid: &v1alpha1.TimelineGrid{StepSeconds: rp.Grid.Step.Seconds(), PhaseSeconds: rp.Grid.Phase.Seconds(), AlignedWith: rp.Grid.AlignedWith, Anchor: rp.Grid.Anchor}}
	if rp.PhaseAnchor != "" {
		src.SyncPhase = &v1alpha1.SyncPhase{FromSeconds: rp.PhaseFrom.Seconds(), ToSeconds: rp.PhaseTo.Seconds(), Anchor: rp.PhaseAnchor}
		src.Notes = append([]string{"the controller's syncs drift later by the time each takes and move when it restarts; the replay's stay where its latest status write puts them"}, src.Notes...)
	}
	t := newTimeline(hpa, rp.From, rp.To, src)
	t.SyncPeriodSeconds = rp.SyncPeriod.Seconds()
	for _, s := range rp.Syncs {
		row := syncOf(hpa, s.Now, s.Decision)
		if s.Observed >= 0 {
			n := s.Observed
			row.Observed = &n
		}
		t.Syncs = append(t.Syncs, row)
	}
	if rp.KubeStateMetrics {
		t.Source.Notes = append(t.Source.Notes, agreement(t.Syncs))
	}
	return t, nil
}

// agreement says how often the replay decided what kube-state-metrics saw the controller set.
func agreement(syncs []v1alpha1.TimelineSync) string {
	seen, same := 0, 0
	for _, s := range syncs {
		if s.Observed == nil {
			continue
		}
		seen++
		if *s.Observed == s.Desired {
			same++
		}
	}
	return fmt.Sprintf("kube-state-metrics saw the controller's decision at %d of %d syncs; the replay decided the same at %d (a scrape lags a sync by up to its interval)", seen, len(syncs), same)
}

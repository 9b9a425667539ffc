package explain

import (
	"errors"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller/history"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history/annotation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// applyRecorded puts the history kubectl hpa run recorded on hpa into the facts when there
// is one, and reports whether it is used: an unusable one costs a warning, and the
// reconstruction (or the replay) stands.
func applyRecorded(f *output.Facts, past history.Events, hpa *autoscalingv2.HorizontalPodAutoscaler, in replicas.Input) bool {
	rec, recorded, recErr := past.Recorded(hpa, in.Now)
	switch {
	case !recorded:
		return false
	case recErr != nil:
		f.Warnings = append(f.Warnings, v1alpha1.Warning{Reason: "HistoryIgnored", Message: history.IgnoredMessage(hpa.Namespace, hpa.Name, recErr,
			"this explanation reconstructs the history from the HPA's status and events instead")})
		return false
	}
	f.HistorySource = v1alpha1.HistoryRecorded
	f.HistoryHolder = rec.Record.Holder
	f.HistoryRecordedAt = rec.Record.At
	sync := time.Duration(rec.Record.SyncMillis) * time.Millisecond
	uses := fmt.Sprintf("kubectl hpa run keeps the recommendations and scale events its next decisions depend on in the HPA's annotation %s, and this decision uses them", annotation.Key)
	const newest = " Its newest recommendation counts as made until now."
	if w, ok := recordedWindowWarning(hpa, rec.Record, in.Config); ok {
		// The window differs because the flags do, not because the spec changed since:
		// the restore's note on a grown window would say the latter.
		f.Warnings = append(f.Warnings, w)
		f.HistoryNote = fmt.Sprintf("%s, but under another downscale stabilization window than run's (see the warning): run's next sync (every %s) decides under its own.%s", uses, sync, newest)
		return true
	}
	f.HistoryNote = fmt.Sprintf("%s: it is the decision run makes at its next sync (every %s) if the metrics stay as they are.%s", uses, sync, newest)
	for _, n := range rec.Restored.Notes {
		f.HistoryNote += " Note: " + n + "."
	}
	return true
}

// applyReplay puts the replay from Prometheus into the facts: the history's source and
// what it found, or, when it failed, a warning and the reconstruction kept.
func applyReplay(f *output.Facts, rp *history.PrometheusReplay, address string) {
	if rp == nil {
		// Nothing was gathered to replay against (the scale or the metrics failed first).
		rp = &history.PrometheusReplay{Source: address, Err: errors.New("nothing to replay against: the decision stopped before its metrics")}
	}
	out := &v1alpha1.Replay{Prometheus: rp.Source}
	f.Replay = out
	if rp.Err != nil {
		out.Error = rp.Err.Error()
		f.Warnings = append(f.Warnings, v1alpha1.Warning{Reason: "PrometheusReplayUnavailable",
			Message: "the history could not be replayed from Prometheus, so it is reconstructed from status and events only: " + rp.Err.Error()})
		return
	}
	f.HistorySource = "prometheus"
	f.HistoryNote = "The cluster's HPA controller keeps its recommendation history in its own memory. This replays the metrics of its longest stabilization window from Prometheus through the decision core at every sync it could have made (its sync phase is known only to the range below), with the visible rescales as the target's size and scale events: the recommendations are those of the middle phase, the times ranges over every phase."
	out.Queries = rp.Queries
	out.From, out.To = &metav1.Time{Time: rp.From}, &metav1.Time{Time: rp.To}
	out.Syncs = rp.Syncs
	out.StepSeconds, out.RateWindowSeconds = rp.Step.Seconds(), rp.RateWindow.Seconds()
	out.SyncPeriodSeconds = rp.SyncPeriod.Seconds()
	out.SyncPhase = &v1alpha1.SyncPhase{FromSeconds: rp.PhaseFrom.Seconds(), ToSeconds: rp.PhaseTo.Seconds(), Anchor: rp.PhaseAnchor}
	out.NextSync = timeRange(rp.NextFrom, rp.NextTo)
	if !rp.HoldEndsFrom.IsZero() {
		out.HoldEnds = timeRange(rp.HoldEndsFrom, rp.HoldEndsTo)
		out.HoldEndsAt = &rp.EndsAt
	}
	out.Notes = rp.Notes
}

// timeRange is [from, to) to the second: from rounded down, to up.
func timeRange(from, to time.Time) *v1alpha1.TimeRange {
	up := to.Truncate(time.Second)
	if up.Before(to) {
		up = up.Add(time.Second)
	}
	return &v1alpha1.TimeRange{From: metav1.Time{Time: from.Truncate(time.Second)}, To: metav1.Time{Time: up}}
}

// recordedWindowWarning says when run recorded hpa's history under another downscale
// stabilization window than cfg's. Without a behavior the window is the controller's flag,
// which the record keeps as its horizon: under another one explain's decision is not the one
// run makes next, and the user may not know which flag run was started with.
func recordedWindowWarning(hpa *autoscalingv2.HorizontalPodAutoscaler, rec annotation.Record, cfg replicas.Config) (v1alpha1.Warning, bool) {
	if hpa.Spec.Behavior != nil {
		return v1alpha1.Warning{}, false
	}
	recorded := time.Duration(rec.Horizon.Window) * time.Second
	if recorded == cfg.DownscaleStabilizationWindow {
		return v1alpha1.Warning{}, false
	}
	return v1alpha1.Warning{Reason: "HistoryWindowDiffers", Message: fmt.Sprintf(
		"kubectl hpa run recorded this history under a %s downscale stabilization window (its --downscale-stabilization; the HPA has no behavior), and this explanation decides under %s: pass --downscale-stabilization=%s for the decision run makes",
		recorded, cfg.DownscaleStabilizationWindow, recorded)}, true
}

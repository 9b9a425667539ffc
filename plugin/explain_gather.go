package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/klog/v2"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/live"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history/annotation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

var vpaGVR = schema.GroupVersionResource{Group: "autoscaling.k8s.io", Version: "v1", Resource: "verticalpodautoscalers"}

// explain decides through evaluation.Evaluate over live reads (three round trips: the HPA
// with its rescale events; the scale with the VPAs; the pods with every metric) and builds
// the Explanation. A non-nil error with a non-nil Explanation means: print it, then exit
// with the error's code.
func (o *ExplainOptions) explain(ctx context.Context) (*output.Explanation, error) {
	c := o.clients
	logger := klog.FromContext(ctx)

	var (
		whatIfs  []output.WhatIf
		usageErr error
		served   map[string]bool
		vpas     *unstructured.UnstructuredList
		vpaErr   error
	)
	opts := evaluation.Options{
		Now:            o.Clock.Now(),
		Config:         o.Config,
		WithoutHistory: true,
		Adjust: func(hpa *autoscalingv2.HorizontalPodAutoscaler) (*autoscalingv2.HorizontalPodAutoscaler, error) {
			adjusted, records, err := applySetTargets(hpa, o.whatIf)
			whatIfs, usageErr = records, err
			return adjusted, err
		},
		// Discovery only after the HPA was read: an unreachable cluster then fails with the
		// one line of the HPA read. The VPAs go out beside the scale.
		Beside: func(ctx context.Context, _ *autoscalingv2.HorizontalPodAutoscaler) {
			served = servedGroupVersions(c.Discovery)
			if served[vpaGVR.GroupVersion().String()] && c.Dynamic != nil {
				vpas, vpaErr = c.Dynamic.Resource(vpaGVR).Namespace(o.Namespace).List(ctx, metav1.ListOptions{})
			}
		},
	}
	if slices.ContainsFunc(o.whatIf, func(w whatIf) bool { return w.flag == "assume" }) {
		opts.Amend = func(in *replicas.Input, asRead replicas.Decision) error {
			assumed, err := applyAssumes(in, o.whatIf, asRead.Metrics)
			whatIfs = append(whatIfs, assumed...)
			usageErr = err
			return err
		}
	}
	src := live.Source(c.Kube, c.Scales, c.Pods, c.Metrics, o.Config)
	if o.prom != nil {
		src.HistoryReader = history.PrometheusReader{Events: live.EventReader(c.Kube, o.Config), Reader: o.prom, SyncPeriod: o.SyncPeriod}
	}
	ev, err := evaluation.Evaluate(ctx, src, o.Namespace, o.Name, opts)
	switch {
	case usageErr != nil:
		return nil, &ExitError{Code: ExitUsage, Err: usageErr}
	case err != nil:
		return nil, o.hpaError(ctx, err)
	}
	hpa, in, d := ev.Read, ev.Input, ev.Decision
	var freshDesired *int32
	if ev.Fresh != nil && ev.Fresh.DesiredReplicas != d.DesiredReplicas {
		freshDesired = &ev.Fresh.DesiredReplicas
	}
	logger.V(2).Info("Decided", "phase", d.Phase, "current", d.CurrentReplicas, "desired", d.DesiredReplicas)

	past, _ := ev.Known.(history.Events)
	replayed, _ := ev.Known.(*history.Prometheus)
	if replayed != nil {
		past = replayed.Events
	}
	_, historyNote := past.Reconstruct(hpa, in.Now)
	facts := output.Facts{
		Input:         in,
		Decision:      d,
		Cluster:       hpa,
		RescaleEvents: past.Events,
		MetricsSource: metricsSource(c),
		HistorySource: output.HistoryReconstructed,
		HistoryNote:   historyNote,
		FreshDesired:  freshDesired,
		WhatIf:        whatIfs,
		Warnings:      warnings(hpa, in, vpas, vpaErr, past.Err),
	}
	rec, recorded, recErr := past.Recorded(hpa, in.Now)
	switch {
	case recorded && recErr != nil:
		facts.Warnings = append(facts.Warnings, output.Warning{Reason: "HistoryIgnored", Message: history.IgnoredMessage(hpa.Namespace, hpa.Name, recErr,
			"this explanation reconstructs the history from the HPA's status and events instead")})
	case recorded:
		facts.HistorySource = output.HistoryRecorded
		facts.HistoryHolder = rec.Record.Holder
		facts.HistoryRecordedAt = rec.Record.At
		sync := time.Duration(rec.Record.SyncMillis) * time.Millisecond
		uses := fmt.Sprintf("kubectl hpa run keeps the recommendations and scale events its next decisions depend on in the HPA's annotation %s, and this decision uses them", annotation.Key)
		const newest = " Its newest recommendation counts as made until now."
		if w, ok := recordedWindowWarning(hpa, rec.Record, in.Config); ok {
			// The window differs because the flags do, not because the spec changed since:
			// the restore's note on a grown window would say the latter.
			facts.Warnings = append(facts.Warnings, w)
			facts.HistoryNote = fmt.Sprintf("%s, but under another downscale stabilization window than run's (see the warning): run's next sync (every %s) decides under its own.%s", uses, sync, newest)
		} else {
			facts.HistoryNote = fmt.Sprintf("%s: it is the decision run makes at its next sync (every %s) if the metrics stay as they are.%s", uses, sync, newest)
			for _, n := range rec.Restored.Notes {
				facts.HistoryNote += " Note: " + n + "."
			}
		}
	}
	// A history kubectl hpa run recorded is its own: there is nothing to replay.
	if replayed != nil && (!recorded || recErr != nil) {
		applyReplay(&facts, replayed.Replay, o.prom.Address())
		if r := facts.Replay; r.Error != "" {
			// One line on stderr too, so that -o json readers and scripts see it.
			fmt.Fprintf(o.ErrOut, "warning: replay from Prometheus unavailable, history reconstructed from status and events only: %s\n", r.Error)
		}
	}
	e := output.Build(facts)
	if err := o.decisionExitError(hpa, in, d, served); err != nil {
		e.Error = &output.Error{ExitCode: err.Code, Reason: ExitReason(err.Code), Message: err.Error()}
		return e, err
	}
	return e, nil
}

// servedGroupVersions returns the group/versions the (cached) discovery client knows;
// empty when discovery fails, which only silences optional warnings.
func servedGroupVersions(dc discovery.DiscoveryInterface) map[string]bool {
	out := map[string]bool{}
	if dc == nil {
		return out
	}
	groups, err := dc.ServerGroups()
	if err != nil {
		return out
	}
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			out[v.GroupVersion] = true
		}
		out[g.Name] = true
	}
	return out
}

// hpaError turns a failed HPA GET into an actionable error; on NotFound it looks (only on
// this error path) whether the namespace exists and whether the HPA lives elsewhere.
func (o *ExplainOptions) hpaError(ctx context.Context, err error) error {
	doing := fmt.Sprintf("getting horizontalpodautoscaler %q in namespace %q", o.Name, o.Namespace)
	if !apierrors.IsNotFound(err) {
		return apiExitError(doing, err)
	}
	kube := o.clients.Kube
	// A server that is not a Kubernetes API server answers 404 to everything.
	if err := checkAPIServer(kube.Discovery(), o.host); err != nil {
		return err
	}
	_, nsErr := kube.CoreV1().Namespaces().Get(ctx, o.Namespace, metav1.GetOptions{})
	if err := namespaceMissing(nsErr, o.Namespace); err != nil {
		return err
	}
	list, lerr := kube.AutoscalingV2().HorizontalPodAutoscalers(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + o.Name})
	if lerr == nil {
		var elsewhere []string
		for _, h := range list.Items {
			if h.Name == o.Name && h.Namespace != o.Namespace {
				elsewhere = append(elsewhere, h.Namespace)
			}
		}
		sort.Strings(elsewhere)
		if len(elsewhere) > 0 {
			return &ExitError{Code: ExitWrongNamespace, Err: fmt.Errorf("horizontalpodautoscaler %q not found in namespace %q, but it exists in namespace %s: pass -n %s",
				o.Name, o.Namespace, strings.Join(elsewhere, ", "), elsewhere[0])}
		}
	}
	return &ExitError{Code: ExitHPANotFound, Err: fmt.Errorf("horizontalpodautoscaler %q not found in namespace %q: list them with kubectl get hpa -n %s", o.Name, o.Namespace, o.Namespace)}
}

// decisionExitError says whether an otherwise printable decision must still end with a
// failure code: the target could not be read, or a metrics API it needs is not served.
func (o *ExplainOptions) decisionExitError(hpa *autoscalingv2.HorizontalPodAutoscaler, in replicas.Input, d replicas.Decision, served map[string]bool) *ExitError {
	ref := hpa.Spec.ScaleTargetRef
	if in.ScaleErr != nil {
		return targetExitError(hpa, in.ScaleErr, o.clients.Discovery)
	}
	for i, m := range d.Metrics {
		if m.Err == nil || i >= len(hpa.Spec.Metrics) {
			continue
		}
		spec := hpa.Spec.Metrics[i]
		if apierrors.IsForbidden(m.Err) {
			return apiExitError(fmt.Sprintf("reading metric %s for %s/%s", output.ShortName(spec), ref.Kind, ref.Name), m.Err)
		}
		if err := o.clients.MetricsErr; err != nil {
			if apierrors.IsForbidden(err) {
				return apiExitError("choosing the metrics source", err)
			}
			return &ExitError{Code: ExitMetricsUnavailable, Err: fmt.Errorf("no metrics source for metric %s: %w", output.ShortName(spec), err)}
		}
		heapster := o.clients.MetricsSelection.Source == metrics.SourceHeapster
		// A registered API whose server is down is left out of discovery too; its reads
		// are source failures, reported below.
		if api := requiredAPI(spec.Type, heapster); api != "" && len(served) > 0 && !served[api] && !metrics.IsSourceFailure(m.Err) {
			return &ExitError{Code: ExitMetricsUnavailable, Err: fmt.Errorf("%s is not served by this cluster, so metric %s cannot be read: %s", api, output.ShortName(spec), metricsAPIHint(api))}
		}
	}
	// A source that answers badly (garbage, stale, 500s, timeouts) leaves the decision with
	// no count: the explanation is printed, but a script must see the failure too.
	if d.Phase == replicas.PhaseMetricsFailed {
		for i, m := range d.Metrics {
			if i < len(hpa.Spec.Metrics) && metrics.IsSourceFailure(m.Err) {
				return &ExitError{Code: ExitFailure, Err: fmt.Errorf("metric %s of %s/%s cannot be read, so nothing would be scaled: %w", output.ShortName(hpa.Spec.Metrics[i]), ref.Kind, ref.Name, m.Err)}
			}
		}
		// Everything was read and still no count: the HPA itself cannot compute.
		reason, msg := "", ""
		for _, c := range d.Conditions {
			if c.Type == autoscalingv2.ScalingActive && c.Status == corev1.ConditionFalse {
				reason, msg = c.Reason, c.Message
			}
		}
		if reason == "" && d.Err != nil {
			reason, msg = "FailedComputeMetricsReplicas", d.Err.Error()
		}
		return &ExitError{Code: ExitCannotCompute, Err: fmt.Errorf("horizontalpodautoscaler %s/%s cannot compute a replica count, so nothing would be scaled (ScalingActive=False, %s): %s",
			hpa.Namespace, hpa.Name, reason, msg)}
	}
	return nil
}

func metricsAPIHint(api string) string {
	switch api {
	case "metrics.k8s.io":
		return "install metrics-server or pass --metrics-source=heapster"
	case "custom.metrics.k8s.io":
		return "install a custom metrics adapter (for example prometheus-adapter)"
	case "external.metrics.k8s.io":
		return "install an external metrics adapter (for example KEDA's or prometheus-adapter)"
	}
	return "install the API's adapter"
}

// targetExitError classifies a scale read failure: missing object, unscalable kind, or RBAC.
func targetExitError(hpa *autoscalingv2.HorizontalPodAutoscaler, err error, dc discovery.DiscoveryInterface) *ExitError {
	ref := hpa.Spec.ScaleTargetRef
	doing := fmt.Sprintf("reading the scale of %s %q (spec.scaleTargetRef of horizontalpodautoscaler %s/%s)", ref.Kind, ref.Name, hpa.Namespace, hpa.Name)
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return apiExitError(doing, err)
	}
	notScalable := &ExitError{Code: ExitTargetNotScalable, Err: fmt.Errorf("%s: %w: scaleTargetRef must name a kind with a scale subresource (Deployment, StatefulSet, ReplicaSet or a custom resource with /scale)", doing, err)}
	var se *replicas.ScaleError
	if errors.As(err, &se) && se.Stage != replicas.ScaleErrorGet {
		return notScalable
	}
	if apierrors.IsNotFound(err) {
		if hasScale, known := scaleSubresourceServed(dc, ref); known && !hasScale {
			return notScalable
		}
		return &ExitError{Code: ExitTargetNotFound, Err: fmt.Errorf("%s: %w: create it or fix spec.scaleTargetRef", doing, err)}
	}
	return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%s: %w", doing, err)}
}

// scaleSubresourceServed looks in (cached) discovery whether ref's kind has /scale.
func scaleSubresourceServed(dc discovery.DiscoveryInterface, ref autoscalingv2.CrossVersionObjectReference) (hasScale, known bool) {
	if dc == nil {
		return false, false
	}
	list, err := dc.ServerResourcesForGroupVersion(ref.APIVersion)
	if err != nil {
		return false, false
	}
	resource := ""
	for _, r := range list.APIResources {
		if r.Kind == ref.Kind && !strings.Contains(r.Name, "/") {
			resource = r.Name
		}
	}
	if resource == "" {
		return false, true
	}
	for _, r := range list.APIResources {
		if r.Name == resource+"/scale" {
			return true, true
		}
	}
	return false, true
}

// requiredAPI is the metrics API group a metric type is read from; Heapster serves
// resource and pods metrics itself.
func requiredAPI(t autoscalingv2.MetricSourceType, heapster bool) string {
	if heapster && (isResourceMetric(t) || t == autoscalingv2.PodsMetricSourceType) {
		return ""
	}
	switch t {
	case autoscalingv2.ResourceMetricSourceType, autoscalingv2.ContainerResourceMetricSourceType:
		return "metrics.k8s.io"
	case autoscalingv2.PodsMetricSourceType, autoscalingv2.ObjectMetricSourceType:
		return "custom.metrics.k8s.io"
	case autoscalingv2.ExternalMetricSourceType:
		return "external.metrics.k8s.io"
	}
	return ""
}

// metricsSource says where numbers came from and why that source was chosen.
func metricsSource(c *explainClients) string {
	if sel := c.MetricsSelection; sel.Detail != "" {
		return sel.String()
	}
	return c.Metrics.Source()
}

// applyReplay puts the replay from Prometheus into the facts: the history's source and
// what it found, or, when it failed, a warning and the reconstruction kept.
func applyReplay(f *output.Facts, rp *history.PrometheusReplay, address string) {
	if rp == nil {
		// Nothing was gathered to replay against (the scale or the metrics failed first).
		rp = &history.PrometheusReplay{Source: address, Err: errors.New("nothing to replay against: the decision stopped before its metrics")}
	}
	out := &output.Replay{Prometheus: rp.Source}
	f.Replay = out
	if rp.Err != nil {
		out.Error = rp.Err.Error()
		f.Warnings = append(f.Warnings, output.Warning{Reason: "PrometheusReplayUnavailable",
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
	out.SyncPhase = &output.SyncPhase{FromSeconds: rp.PhaseFrom.Seconds(), ToSeconds: rp.PhaseTo.Seconds(), Anchor: rp.PhaseAnchor}
	out.NextSync = timeRange(rp.NextFrom, rp.NextTo)
	if !rp.HoldEndsFrom.IsZero() {
		out.HoldEnds = timeRange(rp.HoldEndsFrom, rp.HoldEndsTo)
		out.HoldEndsAt = &rp.EndsAt
	}
	out.Notes = rp.Notes
}

// timeRange is [from, to) to the second: from rounded down, to up.
func timeRange(from, to time.Time) *output.TimeRange {
	up := to.Truncate(time.Second)
	if up.Before(to) {
		up = up.Add(time.Second)
	}
	return &output.TimeRange{From: metav1.Time{Time: from.Truncate(time.Second)}, To: metav1.Time{Time: up}}
}

// recordedWindowWarning says when run recorded hpa's history under another downscale
// stabilization window than cfg's. Without a behavior the window is the controller's flag,
// which the record keeps as its horizon: under another one explain's decision is not the one
// run makes next, and the user may not know which flag run was started with.
func recordedWindowWarning(hpa *autoscalingv2.HorizontalPodAutoscaler, rec annotation.Record, cfg replicas.Config) (output.Warning, bool) {
	if hpa.Spec.Behavior != nil {
		return output.Warning{}, false
	}
	recorded := time.Duration(rec.Horizon.Window) * time.Second
	if recorded == cfg.DownscaleStabilizationWindow {
		return output.Warning{}, false
	}
	return output.Warning{Reason: "HistoryWindowDiffers", Message: fmt.Sprintf(
		"kubectl hpa run recorded this history under a %s downscale stabilization window (its --downscale-stabilization; the HPA has no behavior), and this explanation decides under %s: pass --downscale-stabilization=%s for the decision run makes",
		recorded, cfg.DownscaleStabilizationWindow, recorded)}, true
}

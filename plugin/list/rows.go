package list

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/batch"
	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/live"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/keda"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/lint/rules"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// parallelNamespaces bounds how many namespaces are read at once (each is a handful of lists
// sent together).
const parallelNamespaces = 8

// Row is one HPA's line: its Explanation, with its findings (Explanation.Findings).
type Row struct {
	Explanation *v1alpha1.Explanation
	// Binding is the core's constraint (replicas.ConstraintOf); empty when not evaluated.
	Binding string
	// heldUnknown says a window or a policy's period holds the decision but the history it
	// was decided from is incomplete, so when it lets go is not known.
	heldUnknown bool
}

// heldByTime says whether a binding constraint is one that time releases (a stabilization
// window, a scaling policy's period).
func heldByTime(binding string) bool {
	switch replicas.Constraint(binding) {
	case replicas.ConstraintScaleUpStabilization, replicas.ConstraintScaleDownStabilization, replicas.ConstraintScaleUpLimit, replicas.ConstraintScaleDownLimit:
		return true
	}
	return false
}

// statusWriters are the field managers of hpa's status subresource, the latest first (then by
// name).
func statusWriters(hpa *autoscalingv2.HorizontalPodAutoscaler) []v1alpha1.StatusWriter {
	var out []v1alpha1.StatusWriter
	for _, m := range hpa.ManagedFields {
		if m.Subresource != "status" {
			continue
		}
		i := slices.IndexFunc(out, func(w v1alpha1.StatusWriter) bool { return w.Manager == m.Manager })
		switch {
		case i < 0:
			out = append(out, v1alpha1.StatusWriter{Manager: m.Manager, Time: m.Time})
		case m.Time != nil && (out[i].Time == nil || m.Time.After(out[i].Time.Time)):
			// One manager has an entry per operation (Update, Apply): its latest write counts.
			out[i].Time = m.Time
		}
	}
	slices.SortStableFunc(out, func(a, b v1alpha1.StatusWriter) int {
		return cmp.Or(timeOf(b.Time).Compare(timeOf(a.Time)), cmp.Compare(a.Manager, b.Manager))
	})
	return out
}

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

// Findings are the row's problems, worst first.
func (r Row) Findings() []v1alpha1.Finding { return r.Explanation.Findings }

// Rows lists the HPAs (the only read whose failure fails the command), then decides for each
// from its namespace's batched reads, in namespace and name order.
func (o *Options) Rows(ctx context.Context) ([]Row, error) {
	all, hpas, err := o.listHPAs(ctx)
	if err != nil {
		return nil, err
	}
	missing := o.missingNames(hpas)
	if len(o.Names) > 0 && len(missing) == len(o.Names) {
		return nil, &cmdutil.ExitError{Code: cmdutil.ExitHPANotFound, Err: fmt.Errorf("no horizontalpodautoscaler named %s in namespace %q (kubectl get hpa -n %s lists them)", quoted(o.Names), o.Namespace, o.Namespace)}
	}
	byNS, allByNS := map[string][]*autoscalingv2.HorizontalPodAutoscaler{}, map[string][]*autoscalingv2.HorizontalPodAutoscaler{}
	for _, h := range hpas {
		byNS[h.Namespace] = append(byNS[h.Namespace], h)
	}
	for _, h := range all {
		allByNS[h.Namespace] = append(allByNS[h.Namespace], h)
	}
	var (
		mu  sync.Mutex
		out []Row
		wg  sync.WaitGroup
	)
	sem := make(chan struct{}, parallelNamespaces)
	// Discovery is asked once per pass (per --watch frame), not per HPA with a Pods, Object or
	// External metric, as the lint rules' and the leader Lease's reads below.
	if p, ok := o.clients.Metrics.(metrics.DiscoveryPasses); ok {
		p.StartDiscoveryPass()
	}
	lr := cmdutil.LintReader{Kube: o.clients.Kube, Dynamic: o.clients.Dynamic, Served: cmdutil.ServedGroupVersions(o.clients.Discovery)}
	// The leader Lease is read once for every namespace of this pass.
	leases := live.Leases(o.clients.Kube)
	for ns, list := range byNS {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			rs := o.namespaceRows(ctx, lr, leases, ns, allByNS[ns], list)
			mu.Lock()
			defer mu.Unlock()
			out = append(out, rs...)
		})
	}
	wg.Wait()
	for _, name := range missing {
		out = append(out, notFoundRow(o.Namespace, name))
	}
	if o.ProblemsOnly {
		out = slices.DeleteFunc(out, func(r Row) bool { return len(r.Findings()) == 0 })
	}
	slices.SortFunc(out, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.Explanation.Metadata.Namespace, b.Explanation.Metadata.Namespace), cmp.Compare(a.Explanation.Metadata.Name, b.Explanation.Metadata.Name))
	})
	if o.SortBy != "" {
		SortRows(out, NormalColumn(o.SortBy))
	}
	return out, nil
}

// listHPAs lists the HPAs of the namespace (every namespace with -A): one request. It returns
// them all, which the decisions need (an HPA whose pods another HPA selects is not scaled,
// whether or not -l or the names select the other), and those -l and the names select.
func (o *Options) listHPAs(ctx context.Context) (all, selected []*autoscalingv2.HorizontalPodAutoscaler, err error) {
	ns := o.Namespace
	if o.AllNamespaces {
		ns = metav1.NamespaceAll
	}
	list, err := o.clients.Kube.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		doing := fmt.Sprintf("listing horizontalpodautoscalers in namespace %q", ns)
		if o.AllNamespaces {
			doing = "listing horizontalpodautoscalers in all namespaces"
		}
		return nil, nil, cmdutil.APIExitError(doing, err)
	}
	if len(list.Items) == 0 && !o.AllNamespaces {
		if _, nsErr := o.clients.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); nsErr != nil {
			if err := cmdutil.NamespaceMissing(nsErr, ns, o.ExplicitNamespace); err != nil {
				return nil, nil, err
			}
		}
	}
	for i := range list.Items {
		h := &list.Items[i]
		all = append(all, h)
		if o.selector.Matches(labels.Set(h.Labels)) && (len(o.Names) == 0 || slices.Contains(o.Names, h.Name)) {
			selected = append(selected, h)
		}
	}
	return all, selected, nil
}

// missingNames are the names given that the list did not find.
func (o *Options) missingNames(hpas []*autoscalingv2.HorizontalPodAutoscaler) []string {
	var out []string
	for _, n := range o.Names {
		if !slices.ContainsFunc(hpas, func(h *autoscalingv2.HorizontalPodAutoscaler) bool { return h.Name == n }) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// namespaceRows reads namespace once (batch.Read, and beside it what lint checks, the
// workloads taken from batch's lists) and decides for each of its HPAs through the one
// evaluation path, as explain does (every HPA of the namespace read, all, those selected decided): the cluster's controller now, with the history
// reconstructed from its status and rescale events (or the one run recorded). Each row's
// findings are list's own and the lint rules' on its HPA.
func (o *Options) namespaceRows(ctx context.Context, lr cmdutil.LintReader, leases *history.Leases, namespace string, all, hpas []*autoscalingv2.HorizontalPodAutoscaler) []Row {
	c := o.clients
	var src *batch.Namespace
	read := make(chan struct{})
	go func() {
		defer close(read)
		src = batch.Read(ctx, batch.Clients{Kube: c.Kube, Scales: c.Scales, Metrics: c.Metrics, Config: o.Config, Leases: leases}, namespace, all)
	}()
	objs, notes := lr.Read(ctx, namespace, all, cmdutil.WorkloadsFunc(func(gk schema.GroupKind) ([]runtime.Object, bool, error) {
		<-read
		return src.Workloads(gk)
	}))
	<-read
	for _, n := range notes {
		fmt.Fprintf(o.ErrOut, "warning: %s\n", n)
	}
	linted := lintFindings(rules.Check(objs, cmdutil.LintOptions(o.Config, lr.Served)))
	opts := evaluation.Options{Now: o.Clock.Now(), Config: o.Config, WithoutHistory: true, OmitPodTreatments: o.printer == nil, Overlaps: src}
	out := make([]Row, 0, len(hpas))
	for _, h := range hpas {
		ev, err := evaluation.Evaluate(ctx, src, namespace, h.Name, opts)
		if err != nil {
			// Only the HPA read fails Evaluate, and the HPA is the one listed.
			out = append(out, errorRow(namespace, h.Name, cmdutil.APIExitError("reading horizontalpodautoscaler "+namespace+"/"+h.Name, err)))
			continue
		}
		r := o.rowOf(ev)
		r.Explanation.KEDA = keda.Of(ev.Read, objs.ScaledObjects, ev.Decision.CurrentReplicas)
		r.Explanation.Findings = output.MergeFindings(append(r.Explanation.Findings, keda.Findings(r.Explanation.KEDA)...), linted[h.Name])
		out = append(out, r)
	}
	return out
}

// rowOf builds the Explanation as explain builds it (output.Build) and the row's findings.
func (o *Options) rowOf(ev *evaluation.Evaluation) Row {
	hpa, in, d := ev.Read, ev.Input, ev.Decision
	var freshDesired *int32
	if ev.Fresh != nil && ev.Fresh.DesiredReplicas != d.DesiredReplicas {
		freshDesired = &ev.Fresh.DesiredReplicas
	}
	past, _ := ev.Known.(history.Events)
	facts := output.Facts{
		Input: in, Decision: d, Cluster: hpa, RescaleEvents: past.Events,
		MetricsSource: o.clients.metricsSource(), FreshDesired: freshDesired,
	}
	if rec, ok, err := past.Recorded(hpa, in.Now); ok && err == nil {
		facts.HistorySource, facts.HistoryHolder, facts.HistoryRecordedAt = v1alpha1.HistoryRecorded, rec.Record.Holder, rec.Record.At
		facts.HistoryNote = "the history kubectl hpa run recorded on the HPA"
	} else {
		facts.HistorySource = v1alpha1.HistoryReconstructed
		memory := past.Infer(hpa, in.Scale, in.Now)
		facts.HistoryNote, facts.Memory = memory.Note, &memory
		facts.Alternatives = output.AlternativesOf(in, d, memory.Alternatives(hpa))
	}
	if past.Err != nil {
		facts.Warnings = append(facts.Warnings, v1alpha1.Warning{Reason: "HistoryIncomplete", Message: "the rescale events could not be listed: " + past.Err.Error()})
	}
	e := output.Build(facts)
	if e.Cluster != nil {
		e.Cluster.StatusWriters = statusWriters(hpa)
	}
	// HELD UNTIL comes from the history decided from: with the rescale events unread, it is not known.
	if t, ok := replicas.HeldUntil(in, d); ok && past.Err == nil && e.Verdict != nil {
		e.Verdict.HeldUntil = &metav1.Time{Time: t}
	}
	// After the status writers: a disagreement's causes are read from them.
	e.Findings = output.DecisionFindings(in, d, e)
	r := Row{Explanation: e, Binding: string(replicas.ConstraintOf(d))}
	// A direction its behavior disables is held by that field, which no time releases.
	r.heldUnknown = past.Err != nil && heldByTime(r.Binding) && output.DisabledBy(replicas.ConstraintOf(d), e.Behavior) == ""
	if in.ScaleErr != nil {
		code := cmdutil.TargetExitError(hpa, in.ScaleErr, o.clients.Discovery)
		e.Error = &v1alpha1.Error{ExitCode: code.Code, Reason: cmdutil.ExitReason(code.Code), Message: code.Error()}
		// The target's error as explain words it, with what to do.
		e.Findings[0].Message = code.Error()
	}
	return r
}

// notFoundRow is a named HPA the list did not find.
func notFoundRow(namespace, name string) Row {
	err := &cmdutil.ExitError{Code: cmdutil.ExitHPANotFound, Err: apierrors.NewNotFound(autoscalingv2.Resource("horizontalpodautoscalers"), name)}
	return errorRow(namespace, name, err)
}

// errorRow is an HPA that could not be evaluated at all.
func errorRow(namespace, name string, err error) Row {
	e := v1alpha1.NewExplanation(namespace, name)
	code := cmdutil.ExitCode(err)
	e.Error = &v1alpha1.Error{ExitCode: code, Reason: cmdutil.ExitReason(code), Message: err.Error()}
	var ee *cmdutil.ExitError
	msg := err.Error()
	if errors.As(err, &ee) {
		msg = ee.Err.Error()
	}
	e.Findings = []v1alpha1.Finding{{ID: v1alpha1.FindingNotEvaluated, Severity: rules.SeverityError, Message: msg}}
	return Row{Explanation: e}
}

func quoted(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%q", n)
	}
	return out
}

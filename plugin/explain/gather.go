package explain

import (
	"context"
	"fmt"
	"slices"
	"sync"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/live"
	"github.com/kubectl-hpa/kubectl-hpa/controller/history"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/keda"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/lint/rules"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// explain decides through evaluation.Evaluate over live reads (four round trips: the HPA
// with its rescale events; the scale beside the namespace's HPAs and the lint rules' objects;
// the pods; the metrics, once no other HPA selects the pods) and builds the Explanation, with
// the findings list shows for the HPA: its decision's and the lint rules'. A non-nil error with
// a non-nil Explanation means: print it, then exit with the error's code.
func (o *Options) explain(ctx context.Context) (*v1alpha1.Explanation, error) {
	g := &gathering{o: o, linted: make(chan struct{})}
	ev, err := g.evaluate(ctx, o.source())
	switch {
	case g.usageErr != nil:
		return nil, &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: g.usageErr}
	case err != nil:
		return nil, cmdutil.HPAGetError(ctx, o.clients.Kube, o.clients.Host, o.Namespace, o.ExplicitNamespace, o.Name, err)
	}
	d := ev.Decision
	klog.FromContext(ctx).V(2).Info("Decided", "phase", d.Phase, "current", d.CurrentReplicas, "desired", d.DesiredReplicas)
	e := output.Build(o.facts(ev, g))
	linted := rules.Check(g.objs, cmdutil.LintOptions(o.Config, g.served))
	e.KEDA = keda.Of(ev.Read, g.objs.ScaledObjects, d.CurrentReplicas)
	e.Findings = output.MergeFindings(append(output.DecisionFindings(ev.Input, d, e), keda.Findings(e.KEDA)...), output.LintFindings(linted, o.Namespace, o.Name))
	if err := o.decisionExitError(ev.Read, ev.Input, d, g.served); err != nil {
		if ev.Input.ScaleErr != nil {
			// The target's error as list words it, with what to do.
			e.Findings[0].Message = err.Error()
		}
		e.Error = &v1alpha1.Error{ExitCode: err.Code, Reason: cmdutil.ExitReason(err.Code), Message: err.Error()}
		return e, err
	}
	return e, nil
}

// source reads the cluster live; with --prometheus-url the past is replayed from Prometheus.
func (o *Options) source() evaluation.Source {
	c := o.clients
	src := live.Source(c.Kube, c.Scales, c.Pods, c.Metrics, o.Config)
	if o.prom != nil {
		src.HistoryReader = history.PrometheusReader{Events: live.EventReader(c.Kube, o.Config), Reader: o.prom, SyncPeriod: o.SyncPeriod}
	}
	return src
}

// gathering is what explain's steps around the shared evaluation path gather besides the
// decision: the what-ifs applied, the served APIs, the namespace's HPAs (the overlap check's,
// and the lint rules') and the objects the lint rules check beside them.
type gathering struct {
	o       *Options
	whatIfs []v1alpha1.WhatIf
	// usageErr is a what-if that does not fit the HPA read.
	usageErr error
	served   map[string]bool
	overlaps *live.Overlaps
	// objs are what the lint rules check (read through cmdutil.LintReader, as list reads
	// them), and notes the lists that failed; linted is closed once they are read.
	objs   rules.Objects
	notes  []string
	linted chan struct{}
}

// evaluate is the evaluation path's three steps with explain's what-ifs between them: the HPA
// read, with the --set-target targets, is the one decided for; discovery, the namespace's HPAs
// and the lint rules' objects are read beside the scale, pods and metrics; with an --assume, its
// values replace the metrics read before the decision. It decides as the cluster's controller
// would now, without a history of explain's own, and also from an empty history
// (Evaluation.Fresh); as list and the controller, not when other HPAs select its pods.
func (g *gathering) evaluate(ctx context.Context, src evaluation.Source) (*evaluation.Evaluation, error) {
	read, known, err := evaluation.Read(ctx, src, g.o.Namespace, g.o.Name)
	if err != nil {
		return nil, err
	}
	hpa, err := g.setTargets(read)
	if err != nil {
		return nil, err
	}
	g.overlaps = &live.Overlaps{Kube: g.o.clients.Kube, Scales: listedScales{g}}
	var wg sync.WaitGroup
	wg.Go(func() { g.readBeside(ctx, read) })
	opts := evaluation.Options{Now: g.o.Clock.Now(), Config: g.o.Config, WithoutHistory: true, Overlaps: g.overlaps}
	ev := evaluation.Gather(ctx, src, read, hpa, known, opts)
	wg.Wait()
	if slices.ContainsFunc(g.o.whatIf, func(w cmdutil.WhatIf) bool { return w.Flag == "assume" }) {
		if err := g.assume(&ev.Input, replicas.Decide(ev.Input)); err != nil {
			return nil, err
		}
	}
	evaluation.Decide(ev, opts)
	return ev, nil
}

// setTargets is the HPA the core sees: the one read, with the --set-target targets.
func (g *gathering) setTargets(hpa *autoscalingv2.HorizontalPodAutoscaler) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	adjusted, records, err := applySetTargets(hpa, g.o.whatIf)
	g.whatIfs, g.usageErr = records, err
	return adjusted, err
}

// readBeside reads discovery, the namespace's HPAs and the objects the lint rules check beside
// them, as list reads a namespace's (cmdutil.LintReader: the targeted workloads' kinds, the
// PodDisruptionBudgets, and the VPAs and ScaledObjects where served). Discovery only after the
// HPA was read: an unreachable cluster then fails with the one line of the HPA read. Without
// the list of HPAs (forbidden, say), the rules check the one read.
func (g *gathering) readBeside(ctx context.Context, read *autoscalingv2.HorizontalPodAutoscaler) {
	defer close(g.linted)
	c := g.o.clients
	g.served = cmdutil.ServedGroupVersions(c.Discovery)
	all, err := g.overlaps.HPAs(ctx, g.o.Namespace)
	if err != nil {
		g.notes = append(g.notes, fmt.Sprintf("%v, so whether another HPA selects the same pods (AmbiguousSelector) was not checked", err))
		all = []*autoscalingv2.HorizontalPodAutoscaler{read}
	}
	var notes []string
	g.objs, notes = cmdutil.LintReader{Kube: c.Kube, Dynamic: c.Dynamic, Served: g.served}.Read(ctx, g.o.Namespace, all, nil)
	g.notes = append(g.notes, notes...)
}

// listedScales reads the scales of the other HPAs' targets for the overlap check: a workload
// the lint reader listed gives its scale as the API server computes it (no read of its own),
// any other target's scale subresource is read.
type listedScales struct{ g *gathering }

// Scale implements evaluation.ScaleReader.
func (s listedScales) Scale(ctx context.Context, namespace string, ref autoscalingv2.CrossVersionObjectReference) (*replicas.Scale, error) {
	<-s.g.linted
	if obj := s.listed(namespace, ref); obj != nil {
		if scale, ok := evaluation.WorkloadScale(obj); ok {
			return scale, nil
		}
	}
	return s.g.o.clients.Scales.Scale(ctx, namespace, ref)
}

// listed is ref's workload among those the lint reader listed, or nil.
func (s listedScales) listed(namespace string, ref autoscalingv2.CrossVersionObjectReference) runtime.Object {
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != "apps" {
		return nil
	}
	objs := s.g.objs
	switch ref.Kind {
	case "Deployment":
		return find(objs.Deployments, namespace, ref.Name)
	case "StatefulSet":
		return find(objs.StatefulSets, namespace, ref.Name)
	case "ReplicaSet":
		return find(objs.ReplicaSets, namespace, ref.Name)
	}
	return nil
}

// find is the object of list named namespace/name, or nil.
func find[T interface {
	runtime.Object
	metav1.Object
}](list []T, namespace, name string) runtime.Object {
	for _, o := range list {
		if o.GetNamespace() == namespace && o.GetName() == name {
			return o
		}
	}
	return nil
}

// assume puts the --assume values in place of the metrics read.
func (g *gathering) assume(in *replicas.Input, asRead replicas.Decision) error {
	assumed, err := applyAssumes(in, g.o.whatIf, asRead.Metrics)
	g.whatIfs = append(g.whatIfs, assumed...)
	g.usageErr = err
	return err
}

// facts are what the Explanation is built from: the evaluation, what g gathered beside it,
// and the history the decision used (recorded by run, replayed, or reconstructed).
func (o *Options) facts(ev *evaluation.Evaluation, g *gathering) output.Facts {
	hpa, in, d := ev.Read, ev.Input, ev.Decision
	var freshDesired *int32
	if ev.Fresh != nil && ev.Fresh.DesiredReplicas != d.DesiredReplicas {
		freshDesired = &ev.Fresh.DesiredReplicas
	}
	past, _ := ev.Known.(history.Events)
	replayed, _ := ev.Known.(*history.Prometheus)
	if replayed != nil {
		past = replayed.Events
	}
	memory := past.Infer(hpa, in.Scale, in.Now)
	facts := output.Facts{
		Input:         in,
		Decision:      d,
		Cluster:       hpa,
		RescaleEvents: past.Events,
		MetricsSource: metricsSource(o.clients),
		HistorySource: v1alpha1.HistoryReconstructed,
		HistoryNote:   memory.Note,
		Memory:        &memory,
		Alternatives:  output.AlternativesOf(in, d, memory.Alternatives(hpa)),
		FreshDesired:  freshDesired,
		WhatIf:        g.whatIfs,
		Warnings:      warnings(hpa, in, g.objs.VerticalPodAutoscalers, g.notes, past.Err),
	}
	// A history kubectl hpa run recorded is its own: there is nothing to replay.
	if !applyRecorded(&facts, past, hpa, in) && replayed != nil {
		applyReplay(&facts, replayed.Replay, o.prom.Address())
		if r := facts.Replay; r.Error != "" {
			// One line on stderr too, so that -o json readers and scripts see it.
			fmt.Fprintf(o.ErrOut, "warning: replay from Prometheus unavailable, history reconstructed from status and events only: %s\n", r.Error)
		}
	}
	return facts
}

// metricsSource says where numbers came from and why that source was chosen.
func metricsSource(c *clients) string {
	if sel := c.MetricsSelection; sel.Detail != "" {
		return sel.String()
	}
	return c.Metrics.Source()
}

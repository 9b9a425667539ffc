package run

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/kubectl-hpa/kubectl-hpa/controller"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

// permissionScope is what decides the permissions run needs before any HPA is known.
type permissionScope struct {
	// Namespace watched; "" for all.
	Namespace string
	// Writes is false with --dry-run=client.
	Writes bool
	// Events is false with --dry-run=server (events cannot be dry-run, so none are sent).
	Events bool
	// LeaseNamespace and LeaseName are set when a Lease is held.
	LeaseNamespace, LeaseName string
	// HeapsterProxy names the service proxy path segment ("http:heapster:") in
	// HeapsterNamespace when metrics come from Heapster through the API server.
	HeapsterNamespace, HeapsterProxy string
}

// newPermissionScope derives the scope from the options and the chosen metrics source.
func newPermissionScope(o *Options, sel metrics.Selection) permissionScope {
	s := permissionScope{Namespace: o.Controller.Namespace, Writes: o.writes()}
	s.Events = s.Writes && controller.DryRun(o.DryRun) != controller.DryRunServer
	if s.Writes && o.LeaderElect {
		s.LeaseNamespace, s.LeaseName = o.LeaseNamespace, o.LeaseName
	}
	if sel.Source == metrics.SourceHeapster && o.Metrics.HeapsterURL == "" {
		s.HeapsterNamespace = o.Metrics.HeapsterNamespace
		s.HeapsterProxy = utilnet.JoinSchemeNamePort(o.Metrics.HeapsterScheme, o.Metrics.HeapsterService, o.Metrics.HeapsterPort)
	}
	return s
}

// static lists what run needs whatever its HPAs are: the informers' list and watch, the status
// write and its conflict re-read, events, the Lease and Heapster's service proxy. The
// watch caches of Deployments, ReplicaSets, StatefulSets and ReplicationControllers are left
// out on purpose: without them scales are read live.
func (s permissionScope) static() []cmdutil.Permission {
	ns := s.Namespace
	perms := []cmdutil.Permission{
		{Verb: "list", Group: "autoscaling", Resource: "horizontalpodautoscalers", Namespace: ns},
		{Verb: "watch", Group: "autoscaling", Resource: "horizontalpodautoscalers", Namespace: ns},
		{Verb: "list", Resource: "pods", Namespace: ns},
		{Verb: "watch", Resource: "pods", Namespace: ns},
	}
	if s.Writes {
		perms = append(perms,
			cmdutil.Permission{Verb: "get", Group: "autoscaling", Resource: "horizontalpodautoscalers", Namespace: ns},
			cmdutil.Permission{Verb: "update", Group: "autoscaling", Resource: "horizontalpodautoscalers", Subresource: "status", Namespace: ns})
	}
	if s.Events {
		perms = append(perms,
			cmdutil.Permission{Verb: "create", Resource: "events", Namespace: ns},
			cmdutil.Permission{Verb: "patch", Resource: "events", Namespace: ns})
	}
	if s.LeaseName != "" {
		perms = append(perms,
			cmdutil.Permission{Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Namespace: s.LeaseNamespace, Name: s.LeaseName},
			cmdutil.Permission{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: s.LeaseNamespace},
			cmdutil.Permission{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: s.LeaseNamespace, Name: s.LeaseName})
	}
	if s.HeapsterProxy != "" {
		perms = append(perms, cmdutil.Permission{Verb: "get", Resource: "services", Subresource: "proxy", Namespace: s.HeapsterNamespace, Name: s.HeapsterProxy})
	}
	return perms
}

// kindMapper maps a GroupKind to its GroupResource.
type kindMapper func(gk schema.GroupKind, version string) (schema.GroupResource, error)

// forHPAs lists what the HPAs there are now need: their targets' scale (read, and written
// unless nothing is), and their metrics from the metrics APIs. Kinds the mapper does not
// know are left to the control loop, which reports them on the HPA. HPAs created later are
// not checked here: a permission they lack shows in their conditions and events.
func (s permissionScope) forHPAs(hpas []autoscalingv2.HorizontalPodAutoscaler, mapKind kindMapper, metricsAPI bool) []cmdutil.Permission {
	seen := map[cmdutil.Permission]bool{}
	var perms []cmdutil.Permission
	add := func(p cmdutil.Permission) {
		if !seen[p] {
			seen[p] = true
			perms = append(perms, p)
		}
	}
	for _, h := range hpas {
		ns := h.Namespace
		ref := h.Spec.ScaleTargetRef
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil {
			if gr, err := mapKind(schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, gv.Version); err == nil {
				add(cmdutil.Permission{Verb: "get", Group: gr.Group, Resource: gr.Resource, Subresource: "scale", Namespace: ns})
				if s.Writes {
					add(cmdutil.Permission{Verb: "update", Group: gr.Group, Resource: gr.Resource, Subresource: "scale", Namespace: ns})
				}
			}
		}
		if !metricsAPI {
			continue
		}
		for _, m := range h.Spec.Metrics {
			switch {
			case m.Type == autoscalingv2.ResourceMetricSourceType || m.Type == autoscalingv2.ContainerResourceMetricSourceType:
				add(cmdutil.Permission{Verb: "list", Group: "metrics.k8s.io", Resource: "pods", Namespace: ns})
			case m.Type == autoscalingv2.PodsMetricSourceType && m.Pods != nil:
				add(cmdutil.Permission{Verb: "get", Group: "custom.metrics.k8s.io", Resource: "pods", Subresource: m.Pods.Metric.Name, Namespace: ns, Name: "*"})
			case m.Type == autoscalingv2.ObjectMetricSourceType && m.Object != nil:
				obj := m.Object.DescribedObject
				ogv, err := schema.ParseGroupVersion(obj.APIVersion)
				if err != nil {
					continue
				}
				gr, err := mapKind(schema.GroupKind{Group: ogv.Group, Kind: obj.Kind}, ogv.Version)
				if err != nil {
					continue
				}
				// The custom metrics API names objects by their qualified resource ("deployments.apps").
				add(cmdutil.Permission{Verb: "get", Group: "custom.metrics.k8s.io", Resource: gr.String(), Subresource: m.Object.Metric.Name, Namespace: ns, Name: obj.Name})
			case m.Type == autoscalingv2.ExternalMetricSourceType && m.External != nil:
				add(cmdutil.Permission{Verb: "list", Group: "external.metrics.k8s.io", Resource: m.External.Metric.Name, Namespace: ns})
			}
		}
	}
	return perms
}

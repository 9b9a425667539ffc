package plugin

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
)

// The ClusterRoles in deploy/rbac/ that hold every permission of each command.
const (
	explainRole = "kubectl-hpa-explain"
	runRole     = "kubectl-hpa-run"
)

// permission is one RBAC permission: a verb on a resource (and subresource) of an API group,
// in a namespace ("" for all namespaces), optionally on one named object.
type permission struct {
	Verb, Group, Resource, Subresource, Namespace, Name string
}

// String is what a user reads and a cluster admin grants, e.g.
// `update horizontalpodautoscalers/status (autoscaling) in namespace "shop"`.
func (p permission) String() string {
	var b strings.Builder
	b.WriteString(p.Verb + " " + p.Resource)
	if p.Subresource != "" {
		b.WriteString("/" + p.Subresource)
	}
	group := p.Group
	if group == "" {
		group = "core"
	}
	b.WriteString(" (" + group + ")")
	if p.Name != "" {
		fmt.Fprintf(&b, " named %q", p.Name)
	}
	if p.Namespace == "" {
		b.WriteString(" in all namespaces")
	} else {
		fmt.Fprintf(&b, " in namespace %q", p.Namespace)
	}
	return b.String()
}

// forbiddenRE reads the permission out of the API server's Forbidden message (the format of
// k8s.io/apiserver's forbiddenMessage, stable since RBAC went GA).
var forbiddenRE = regexp.MustCompile(`User "([^"]*)" cannot (\S+) resource "([^"]+)" in API group "([^"]*)"(?: in the namespace "([^"]*)"| at the cluster scope)`)

// deniedPermission extracts who was denied which permission from a Forbidden error.
func deniedPermission(err error) (p permission, user string, ok bool) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsForbidden(err) {
		return permission{}, "", false
	}
	st := status.Status()
	m := forbiddenRE.FindStringSubmatch(st.Message)
	if m == nil {
		return permission{}, "", false
	}
	p = permission{Verb: m[2], Group: m[4], Namespace: m[5]}
	p.Resource, p.Subresource, _ = strings.Cut(m[3], "/")
	if st.Details != nil {
		p.Name = st.Details.Name
	}
	return p, m[1], true
}

// forbiddenError is a Forbidden API error rendered as the one permission that was missing.
type forbiddenError struct {
	doing string
	perm  permission
	user  string
	role  string
	err   error
}

func (e *forbiddenError) Error() string {
	return fmt.Sprintf("%s: forbidden: user %q lacks the permission to %s; ask your cluster admin to grant it (the %s ClusterRole in deploy/rbac/ holds every permission this command uses)",
		e.doing, e.user, e.perm, e.role)
}

func (e *forbiddenError) Unwrap() error { return e.err }

// missingPermissionsError lists what a SelfSubjectAccessReview preflight found denied.
type missingPermissionsError struct {
	command string
	missing []permission
	role    string
}

func (e *missingPermissionsError) Error() string {
	names := make([]string, len(e.missing))
	for i, p := range e.missing {
		names[i] = p.String()
	}
	them := "it"
	if len(names) > 1 {
		them = "them"
	}
	return fmt.Sprintf("%s is not allowed to %s; ask your cluster admin to grant %s (the %s ClusterRole in deploy/rbac/ holds every permission this command uses)",
		e.command, strings.Join(names, "; "), them, e.role)
}

// preflightParallelism bounds the SelfSubjectAccessReviews in flight at once.
const preflightParallelism = 8

// deniedOf asks the API server, one SelfSubjectAccessReview each, whether the current user may
// do perms, and returns the denied ones in the order given. Every authenticated user may create
// SelfSubjectAccessReviews (system:basic-user); they change nothing.
func deniedOf(ctx context.Context, client authorizationv1client.SelfSubjectAccessReviewsGetter, perms []permission) ([]permission, error) {
	allowed := make([]bool, len(perms))
	errs := make([]error, len(perms))
	sem := make(chan struct{}, preflightParallelism)
	var wg sync.WaitGroup
	for i, p := range perms {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: p.Namespace, Verb: p.Verb, Group: p.Group, Resource: p.Resource, Subresource: p.Subresource, Name: p.Name,
				},
			}}
			got, err := client.SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err != nil {
				errs[i] = fmt.Errorf("asking whether we may %s: %w", p, err)
				return
			}
			allowed[i] = got.Status.Allowed
		})
	}
	wg.Wait()
	// One failure usually means all fail alike; the first says enough.
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	var denied []permission
	for i, p := range perms {
		if !allowed[i] {
			denied = append(denied, p)
		}
	}
	return denied, nil
}

// runPermissionScope is what decides the permissions run needs before any HPA is known.
type runPermissionScope struct {
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

// newRunPermissionScope derives the scope from the options and the chosen metrics source.
func newRunPermissionScope(o *RunOptions, sel metrics.Selection) runPermissionScope {
	s := runPermissionScope{Namespace: o.Controller.Namespace, Writes: o.writes()}
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
func (s runPermissionScope) static() []permission {
	ns := s.Namespace
	perms := []permission{
		{Verb: "list", Group: "autoscaling", Resource: "horizontalpodautoscalers", Namespace: ns},
		{Verb: "watch", Group: "autoscaling", Resource: "horizontalpodautoscalers", Namespace: ns},
		{Verb: "list", Resource: "pods", Namespace: ns},
		{Verb: "watch", Resource: "pods", Namespace: ns},
	}
	if s.Writes {
		perms = append(perms,
			permission{Verb: "get", Group: "autoscaling", Resource: "horizontalpodautoscalers", Namespace: ns},
			permission{Verb: "update", Group: "autoscaling", Resource: "horizontalpodautoscalers", Subresource: "status", Namespace: ns})
	}
	if s.Events {
		perms = append(perms,
			permission{Verb: "create", Resource: "events", Namespace: ns},
			permission{Verb: "patch", Resource: "events", Namespace: ns})
	}
	if s.LeaseName != "" {
		perms = append(perms,
			permission{Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Namespace: s.LeaseNamespace, Name: s.LeaseName},
			permission{Verb: "create", Group: "coordination.k8s.io", Resource: "leases", Namespace: s.LeaseNamespace},
			permission{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: s.LeaseNamespace, Name: s.LeaseName})
	}
	if s.HeapsterProxy != "" {
		perms = append(perms, permission{Verb: "get", Resource: "services", Subresource: "proxy", Namespace: s.HeapsterNamespace, Name: s.HeapsterProxy})
	}
	return perms
}

// kindMapper maps a GroupKind to its GroupResource.
type kindMapper func(gk schema.GroupKind, version string) (schema.GroupResource, error)

// forHPAs lists what the HPAs there are now need: their targets' scale (read, and written
// unless nothing is), and their metrics from the metrics APIs. Kinds the mapper does not
// know are left to the control loop, which reports them on the HPA. HPAs created later are
// not checked here: a permission they lack shows in their conditions and events.
func (s runPermissionScope) forHPAs(hpas []autoscalingv2.HorizontalPodAutoscaler, mapKind kindMapper, metricsAPI bool) []permission {
	seen := map[permission]bool{}
	var perms []permission
	add := func(p permission) {
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
				add(permission{Verb: "get", Group: gr.Group, Resource: gr.Resource, Subresource: "scale", Namespace: ns})
				if s.Writes {
					add(permission{Verb: "update", Group: gr.Group, Resource: gr.Resource, Subresource: "scale", Namespace: ns})
				}
			}
		}
		if !metricsAPI {
			continue
		}
		for _, m := range h.Spec.Metrics {
			switch {
			case m.Type == autoscalingv2.ResourceMetricSourceType || m.Type == autoscalingv2.ContainerResourceMetricSourceType:
				add(permission{Verb: "list", Group: "metrics.k8s.io", Resource: "pods", Namespace: ns})
			case m.Type == autoscalingv2.PodsMetricSourceType && m.Pods != nil:
				add(permission{Verb: "get", Group: "custom.metrics.k8s.io", Resource: "pods", Subresource: m.Pods.Metric.Name, Namespace: ns, Name: "*"})
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
				add(permission{Verb: "get", Group: "custom.metrics.k8s.io", Resource: gr.String(), Subresource: m.Object.Metric.Name, Namespace: ns, Name: obj.Name})
			case m.Type == autoscalingv2.ExternalMetricSourceType && m.External != nil:
				add(permission{Verb: "list", Group: "external.metrics.k8s.io", Resource: m.External.Metric.Name, Namespace: ns})
			}
		}
	}
	return perms
}

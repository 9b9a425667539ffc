package run

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

// checkNamespace fails with cmdutil.ExitWrongNamespace when the namespace watched does not exist:
// its informers would list nothing and a Lease could never be created in it, so run would
// wait without a word. It is asked only when no HPA matched, as explain asks only when the
// HPA is not found; a check RBAC does not allow proves nothing and is let through.
func (o *Options) checkNamespace(ctx context.Context, kube kubernetes.Interface) error {
	if o.Controller.Namespace == metav1.NamespaceAll {
		return nil
	}
	_, err := kube.CoreV1().Namespaces().Get(ctx, o.Controller.Namespace, metav1.GetOptions{})
	return cmdutil.NamespaceMissing(err, o.Controller.Namespace, o.ExplicitNamespace)
}

// preflight checks, before anything starts, that every permission run needs is granted, and
// fails naming all that are missing: without it a missing list or watch keeps the caches from
// ever syncing (run would wait silently) and a missing write fails on every sync.
func (o *Options) preflight(ctx context.Context, kube kubernetes.Interface, sel metrics.Selection, mapper meta.RESTMapper) error {
	logger := klog.FromContext(ctx)
	scope := newPermissionScope(o, sel)
	static := scope.static()
	denied, err := cmdutil.Denied(ctx, kube.AuthorizationV1(), static)
	if err != nil {
		return preflightFailed(ctx, err)
	}
	listHPAs := static[0]
	if !slices.Contains(denied, listHPAs) {
		hpas, err := kube.AutoscalingV2().HorizontalPodAutoscalers(scope.Namespace).List(ctx, metav1.ListOptions{LabelSelector: o.Selector})
		if err != nil {
			return preflightFailed(ctx, err)
		}
		if len(hpas.Items) == 0 {
			if err := o.checkNamespace(ctx, kube); err != nil {
				return err
			}
		}
		mapKind := func(gk schema.GroupKind, version string) (schema.GroupResource, error) {
			m, err := mapper.RESTMapping(gk, version)
			if err != nil {
				return schema.GroupResource{}, err
			}
			return m.Resource.GroupResource(), nil
		}
		more, err := cmdutil.Denied(ctx, kube.AuthorizationV1(), scope.forHPAs(hpas.Items, mapKind, sel.Source == metrics.SourceMetricsAPI))
		if err != nil {
			return preflightFailed(ctx, err)
		}
		denied = append(denied, more...)
	}
	if len(denied) > 0 {
		role := cmdutil.RunRole
		if !o.writes() {
			role = cmdutil.ExplainRole
		}
		return &cmdutil.ExitError{Code: cmdutil.ExitForbidden, Err: &cmdutil.MissingPermissionsError{Command: "kubectl hpa run", Missing: denied, Role: role}}
	}
	logger.V(2).Info("Permissions checked", "count", len(static))
	return nil
}

// preflightFailed decides what a failed permission check means: bad credentials end the
// run; anything else (an authorizer that cannot answer reviews, a slow server) only costs
// the early warning, and the loop itself reports what it cannot do.
func preflightFailed(ctx context.Context, err error) error {
	if apierrors.IsUnauthorized(err) || ctx.Err() != nil {
		return cmdutil.APIExitError("checking permissions", err)
	}
	klog.FromContext(ctx).Error(err, "Could not check permissions ahead; continuing")
	return nil
}

package cmdutil

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// apiForbidden builds the Forbidden error the API server's RBAC authorizer returns.
func apiForbidden(user, verb, group, resource, subresource, namespace, name string) error {
	res := resource
	if subresource != "" {
		res += "/" + subresource
	}
	msg := fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", user, verb, res, group)
	if namespace != "" {
		msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", user, verb, res, group, namespace)
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: group, Resource: resource}, name, errors.New(msg))
}

func TestDeniedPermissionIsReadFromTheAPIServersForbiddenMessage(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantPerm Permission
		wantUser string
		wantOK   bool
	}{
		{"namespaced get", apiForbidden("dev", "get", "autoscaling", "horizontalpodautoscalers", "", "shop", "web"),
			Permission{Verb: "get", Group: "autoscaling", Resource: "horizontalpodautoscalers", Namespace: "shop", Name: "web"}, "dev", true},
		{"subresource of the core group", apiForbidden("system:serviceaccount:a:b", "get", "", "services", "proxy", "kube-system", "http:heapster:"),
			Permission{Verb: "get", Resource: "services", Subresource: "proxy", Namespace: "kube-system", Name: "http:heapster:"}, "system:serviceaccount:a:b", true},
		{"cluster scope", apiForbidden("dev", "list", "autoscaling", "horizontalpodautoscalers", "", "", ""),
			Permission{Verb: "list", Group: "autoscaling", Resource: "horizontalpodautoscalers"}, "dev", true},
		{"wrapped by a metrics client", fmt.Errorf("unable to fetch metrics: forbidden: %w", apiForbidden("dev", "list", "metrics.k8s.io", "pods", "", "shop", "")),
			Permission{Verb: "list", Group: "metrics.k8s.io", Resource: "pods", Namespace: "shop"}, "dev", true},
		{"forbidden by something other than RBAC", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New("quota exceeded")),
			Permission{}, "", false},
		{"not forbidden", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "x"), Permission{}, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, user, ok := deniedPermission(tc.err)
			if ok != tc.wantOK || user != tc.wantUser {
				t.Fatalf("ok %v user %q, want %v %q", ok, user, tc.wantOK, tc.wantUser)
			}
			if diff := cmp.Diff(tc.wantPerm, p); diff != "" {
				t.Errorf("permission (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExplainNamesTheMissingPermissionInOneLine(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"HPA read", apiForbidden("dev", "get", "autoscaling", "horizontalpodautoscalers", "", "shop", "web"),
			`getting it: forbidden: user "dev" lacks the permission to get horizontalpodautoscalers (autoscaling) named "web" in namespace "shop"; ask your cluster admin to grant it (the ClusterRole kubectl-hpa-explain holds every permission this command uses; kubectl hpa rbac explain prints it)`},
		{"metrics read", apiForbidden("dev", "list", "metrics.k8s.io", "pods", "", "shop", ""),
			`getting it: forbidden: user "dev" lacks the permission to list pods (metrics.k8s.io) in namespace "shop"; ask your cluster admin to grant it (the ClusterRole kubectl-hpa-explain holds every permission this command uses; kubectl hpa rbac explain prints it)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ee := APIExitError("getting it", tc.err)
			if ee.Code != ExitForbidden {
				t.Errorf("exit code %d, want %d", ee.Code, ExitForbidden)
			}
			if diff := cmp.Diff(tc.want, ee.Error()); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			if !apierrors.IsForbidden(ee) {
				t.Error("the API error is no longer in the chain")
			}
		})
	}
}

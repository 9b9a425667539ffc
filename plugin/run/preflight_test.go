package run

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

// grants answers SelfSubjectAccessReviews from a list of allowed permissions, as RBAC would
// with rules naming exactly them (an allowed permission without a name covers every name),
// and records what was asked.
type grants struct {
	allowed []cmdutil.Permission
	asked   []cmdutil.Permission
	err     error
}

func (g *grants) react(a clienttesting.Action) (bool, runtime.Object, error) {
	review := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
	if g.err != nil {
		return true, nil, g.err
	}
	ra := review.Spec.ResourceAttributes
	asked := cmdutil.Permission{Verb: ra.Verb, Group: ra.Group, Resource: ra.Resource, Subresource: ra.Subresource, Namespace: ra.Namespace, Name: ra.Name}
	g.asked = append(g.asked, asked)
	for _, p := range g.allowed {
		if p.Verb == asked.Verb && p.Group == asked.Group && p.Resource == asked.Resource && p.Subresource == asked.Subresource &&
			(p.Namespace == "" || p.Namespace == asked.Namespace) && (p.Name == "" || p.Name == asked.Name) {
			review.Status.Allowed = true
		}
	}
	return true, review, nil
}

func without(perms []cmdutil.Permission, drop ...cmdutil.Permission) []cmdutil.Permission {
	var out []cmdutil.Permission
	for _, p := range perms {
		keep := true
		for _, d := range drop {
			if p == d {
				keep = false
			}
		}
		if keep {
			out = append(out, p)
		}
	}
	return out
}

// runRoleGrants are the rules of deploy/rbac's kubectl-hpa-run role for the kinds and metrics
// the tests use, bound in every namespace.
func runRoleGrants() []cmdutil.Permission {
	var out []cmdutil.Permission
	for _, v := range []string{"get", "list", "watch"} {
		out = append(out, cmdutil.Permission{Verb: v, Group: "autoscaling", Resource: "horizontalpodautoscalers"})
	}
	return append(out,
		cmdutil.Permission{Verb: "update", Group: "autoscaling", Resource: "horizontalpodautoscalers", Subresource: "status"},
		cmdutil.Permission{Verb: "list", Resource: "pods"}, cmdutil.Permission{Verb: "watch", Resource: "pods"},
		cmdutil.Permission{Verb: "create", Resource: "events"}, cmdutil.Permission{Verb: "patch", Resource: "events"},
		cmdutil.Permission{Verb: "get", Group: "coordination.k8s.io", Resource: "leases"},
		cmdutil.Permission{Verb: "create", Group: "coordination.k8s.io", Resource: "leases"},
		cmdutil.Permission{Verb: "update", Group: "coordination.k8s.io", Resource: "leases"},
		cmdutil.Permission{Verb: "get", Group: "apps", Resource: "deployments", Subresource: "scale"},
		cmdutil.Permission{Verb: "update", Group: "apps", Resource: "deployments", Subresource: "scale"},
		cmdutil.Permission{Verb: "get", Group: "apps", Resource: "statefulsets", Subresource: "scale"},
		cmdutil.Permission{Verb: "update", Group: "apps", Resource: "statefulsets", Subresource: "scale"},
		cmdutil.Permission{Verb: "get", Resource: "services", Subresource: "proxy", Namespace: "kube-system", Name: "http:heapster:"},
		cmdutil.Permission{Verb: "list", Group: "metrics.k8s.io", Resource: "pods"},
		cmdutil.Permission{Verb: "get", Group: "custom.metrics.k8s.io", Resource: "pods", Subresource: "requests_per_second"},
		cmdutil.Permission{Verb: "get", Group: "custom.metrics.k8s.io", Resource: "ingresses.networking.k8s.io", Subresource: "hits"},
		cmdutil.Permission{Verb: "list", Group: "external.metrics.k8s.io", Resource: "queue_depth"},
	)
}

func preflightMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}, meta.RESTScopeNamespace)
	return m
}

// everyMetricHPA targets a StatefulSet and has one metric of each kind read from the metrics APIs.
func everyMetricHPA() *autoscalingv2.HorizontalPodAutoscaler {
	h := testHPA("queue", "worker")
	h.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "worker"}
	h.Spec.Metrics = append(h.Spec.Metrics,
		autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "requests_per_second"}}},
		autoscalingv2.MetricSpec{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "main"},
			Metric:          autoscalingv2.MetricIdentifier{Name: "hits"}}},
		autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "queue_depth"}}},
	)
	return h
}

func TestRunPreflightNamesEveryMissingPermission(t *testing.T) {
	metricsAPI := metrics.Selection{Source: metrics.SourceMetricsAPI}
	heapster := metrics.Selection{Source: metrics.SourceHeapster}
	updateStatus := cmdutil.Permission{Verb: "update", Group: "autoscaling", Resource: "horizontalpodautoscalers", Subresource: "status"}
	listMetrics := cmdutil.Permission{Verb: "list", Group: "metrics.k8s.io", Resource: "pods"}
	listHPAs := cmdutil.Permission{Verb: "list", Group: "autoscaling", Resource: "horizontalpodautoscalers"}
	tests := []struct {
		name    string
		args    []string
		sel     metrics.Selection
		allowed []cmdutil.Permission
		hpas    []runtime.Object
		// want is the error's message; empty for success.
		want string
		// wantAsked, when set, is every permission asked about.
		wantAsked []cmdutil.Permission
	}{
		{name: "the run role is enough", args: []string{"-n", "shop"}, sel: metricsAPI, allowed: runRoleGrants(),
			hpas: []runtime.Object{testHPA("web", "web"), everyMetricHPA()}},
		{name: "a missing status update is named with its namespace", args: []string{"-n", "shop"}, sel: metricsAPI,
			allowed: without(runRoleGrants(), updateStatus), hpas: []runtime.Object{testHPA("web", "web")},
			want: `kubectl hpa run is not allowed to update horizontalpodautoscalers/status (autoscaling) in namespace "shop"; ask your cluster admin to grant it (the ClusterRole kubectl-hpa-run holds every permission this command uses; kubectl hpa rbac run prints it)`},
		{name: "every missing permission at once, those of existing HPAs included", args: []string{"-n", "shop"}, sel: metricsAPI,
			allowed: without(runRoleGrants(), updateStatus, listMetrics,
				cmdutil.Permission{Verb: "create", Resource: "events"},
				cmdutil.Permission{Verb: "update", Group: "apps", Resource: "statefulsets", Subresource: "scale"},
				cmdutil.Permission{Verb: "list", Group: "external.metrics.k8s.io", Resource: "queue_depth"}),
			hpas: []runtime.Object{testHPA("web", "web"), everyMetricHPA()},
			want: `kubectl hpa run is not allowed to update horizontalpodautoscalers/status (autoscaling) in namespace "shop"; ` +
				`create events (core) in namespace "shop"; update statefulsets/scale (apps) in namespace "shop"; ` +
				`list pods (metrics.k8s.io) in namespace "shop"; list queue_depth (external.metrics.k8s.io) in namespace "shop"; ` +
				`ask your cluster admin to grant them (the ClusterRole kubectl-hpa-run holds every permission this command uses; kubectl hpa rbac run prints it)`},
		{name: "without list on HPAs the HPAs are not read", args: []string{"-n", "shop"}, sel: metricsAPI,
			allowed: without(runRoleGrants(), listHPAs), hpas: []runtime.Object{testHPA("web", "web")},
			want: `kubectl hpa run is not allowed to list horizontalpodautoscalers (autoscaling) in namespace "shop"; ask your cluster admin to grant it (the ClusterRole kubectl-hpa-run holds every permission this command uses; kubectl hpa rbac run prints it)`},
		{name: "dry-run=client asks only for reads and points at the read-only role", args: []string{"-n", "shop", "--dry-run=client"}, sel: metricsAPI,
			allowed: nil, hpas: []runtime.Object{testHPA("web", "web")},
			want: `kubectl hpa run is not allowed to list horizontalpodautoscalers (autoscaling) in namespace "shop"; watch horizontalpodautoscalers (autoscaling) in namespace "shop"; ` +
				`list pods (core) in namespace "shop"; watch pods (core) in namespace "shop"; ask your cluster admin to grant them (the ClusterRole kubectl-hpa-explain holds every permission this command uses; kubectl hpa rbac explain prints it)`},
		{name: "dry-run=client with read grants asks for the target's scale and metrics reads only", args: []string{"-n", "shop", "--dry-run=client"}, sel: metricsAPI,
			allowed: runRoleGrants(), hpas: []runtime.Object{testHPA("web", "web")},
			wantAsked: []cmdutil.Permission{
				{Verb: "list", Group: "autoscaling", Resource: "horizontalpodautoscalers", Namespace: "shop"},
				{Verb: "watch", Group: "autoscaling", Resource: "horizontalpodautoscalers", Namespace: "shop"},
				{Verb: "list", Resource: "pods", Namespace: "shop"},
				{Verb: "watch", Resource: "pods", Namespace: "shop"},
				{Verb: "get", Group: "apps", Resource: "deployments", Subresource: "scale", Namespace: "shop"},
				{Verb: "list", Group: "metrics.k8s.io", Resource: "pods", Namespace: "shop"},
			}},
		{name: "dry-run=server writes with dryRun=All but records no events", args: []string{"-n", "shop", "--dry-run=server"}, sel: metricsAPI,
			allowed: without(runRoleGrants(), cmdutil.Permission{Verb: "create", Resource: "events"}, cmdutil.Permission{Verb: "patch", Resource: "events"}),
			hpas:    []runtime.Object{testHPA("web", "web")}},
		{name: "the Lease is checked by name in its namespace", args: []string{"-n", "shop", "--leader-elect-lease-namespace=ops"}, sel: metricsAPI,
			allowed: append(without(runRoleGrants(), cmdutil.Permission{Verb: "update", Group: "coordination.k8s.io", Resource: "leases"}),
				cmdutil.Permission{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: "ops", Name: "other"}),
			want: `kubectl hpa run is not allowed to update leases (coordination.k8s.io) named "kubectl-hpa" in namespace "ops"; ask your cluster admin to grant it (the ClusterRole kubectl-hpa-run holds every permission this command uses; kubectl hpa rbac run prints it)`},
		{name: "Heapster through the service proxy needs the proxy and no metrics APIs", args: []string{"-A", "--leader-elect=false"}, sel: heapster,
			allowed: without(runRoleGrants(), listMetrics), hpas: []runtime.Object{testHPA("web", "web")}},
		{name: "all namespaces need cluster-wide grants", args: []string{"-A"}, sel: metricsAPI,
			allowed: []cmdutil.Permission{{Verb: "list", Group: "autoscaling", Resource: "horizontalpodautoscalers", Namespace: "shop"}},
			want: `kubectl hpa run is not allowed to list horizontalpodautoscalers (autoscaling) in all namespaces; watch horizontalpodautoscalers (autoscaling) in all namespaces; ` +
				`list pods (core) in all namespaces; watch pods (core) in all namespaces; get horizontalpodautoscalers (autoscaling) in all namespaces; ` +
				`update horizontalpodautoscalers/status (autoscaling) in all namespaces; create events (core) in all namespaces; patch events (core) in all namespaces; ` +
				`get leases (coordination.k8s.io) named "kubectl-hpa" in namespace "default"; create leases (coordination.k8s.io) in namespace "default"; ` +
				`update leases (coordination.k8s.io) named "kubectl-hpa" in namespace "default"; ask your cluster admin to grant them (the ClusterRole kubectl-hpa-run holds every permission this command uses; kubectl hpa rbac run prints it)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := preflightOptions(t, tc.args...)
			// The namespace exists: a run finding no HPA asks.
			kube := fake.NewClientset(append(tc.hpas, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})...)
			g := &grants{allowed: tc.allowed}
			kube.PrependReactor("create", "selfsubjectaccessreviews", g.react)
			err := o.preflight(context.Background(), kube, tc.sel, preflightMapper())
			got := ""
			if err != nil {
				got = err.Error()
				if cmdutil.ExitCode(err) != cmdutil.ExitForbidden {
					t.Errorf("exit code %d, want %d", cmdutil.ExitCode(err), cmdutil.ExitForbidden)
				}
				if strings.Contains(got, "\n") {
					t.Errorf("message spans lines: %q", got)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("preflight error (-want +got):\n%s", diff)
			}
			if tc.wantAsked != nil {
				byString := cmpopts.SortSlices(func(a, b cmdutil.Permission) bool { return a.String() < b.String() })
				if diff := cmp.Diff(tc.wantAsked, g.asked, byString); diff != "" {
					t.Errorf("permissions asked (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestRunPreflightOnlyEndsTheRunOnBadCredentials(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantCode int
	}{
		{"reviews unanswerable: continue", apierrors.NewInternalError(errors.New("authorizer webhook down")), cmdutil.ExitOK},
		{"credentials rejected: stop", apierrors.NewUnauthorized("token expired"), cmdutil.ExitUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := preflightOptions(t, "-n", "shop")
			kube := fake.NewClientset()
			kube.PrependReactor("create", "selfsubjectaccessreviews", (&grants{err: tc.err}).react)
			err := o.preflight(context.Background(), kube, metrics.Selection{Source: metrics.SourceMetricsAPI}, preflightMapper())
			code := cmdutil.ExitOK
			if err != nil {
				code = cmdutil.ExitCode(err)
			}
			if code != tc.wantCode {
				t.Errorf("exit code %d (%v), want %d", code, err, tc.wantCode)
			}
		})
	}
}

// preflightOptions parses run's flags against a kubeconfig whose namespace is "default".
func preflightOptions(t *testing.T, args ...string) *Options {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	path := cmdtest.Kubeconfig(t)
	flags.KubeConfig = &path
	o := NewOptions(flags, genericiooptions.NewTestIOStreamsDiscard())
	cmd := newCmd(o)
	flags.AddFlags(cmd.Flags())
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	if err := o.Complete(); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	return o
}

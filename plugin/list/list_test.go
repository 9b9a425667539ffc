package list

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/live"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

func TestTables(t *testing.T) {
	tests := []struct {
		golden string
		args   []string
	}{
		{"shop", []string{"-n", "shop"}},
		{"all-wide", []string{"-A", "-o", "wide"}},
		{"problems-by-would-be", []string{"-n", "shop", "--problems", "--sort-by", "would-be"}},
		{"shop-json", []string{"-n", "shop", "-o", "json"}},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			r := run(t, shop().build(t), tc.args...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			cmdtest.CheckGolden(t, tc.golden, r.stdout)
		})
	}
}

// requestsByNamespace counts the API requests of every fake by namespace ("" for cluster-wide
// ones), without discovery (cached in real use), and fails on anything but get and list.
func requestsByNamespace(t *testing.T, f *fakes) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	var actions []clienttesting.Action
	actions = append(actions, f.kube.Actions()...)
	actions = append(actions, f.scale.Actions()...)
	actions = append(actions, f.metrics.Actions()...)
	for _, a := range actions {
		switch a.GetResource().Resource {
		case "group", "resource", "version":
			continue
		}
		if v := a.GetVerb(); v != "get" && v != "list" {
			t.Errorf("list wrote: %s %s", v, a.GetResource())
		}
		r := a.GetVerb() + " " + a.GetResource().GroupResource().String()
		if sub := a.GetSubresource(); sub != "" {
			r += "/" + sub
		}
		out[a.GetNamespace()] = append(out[a.GetNamespace()], r)
	}
	for ns := range out {
		slices.Sort(out[ns])
	}
	return out
}

// manyNamespaces is 3 namespaces of 5 HPAs each, every HPA on a Deployment of its own.
func manyNamespaces() *cluster {
	c := &cluster{}
	for _, ns := range []string{"a", "b", "c"} {
		for i := range 5 {
			name := fmt.Sprintf("app%d", i)
			c.app(ns, name, 2, "300m", hpa(ns, name, name, 60, 10, 2, 2))
			c.rescale(ns, name, 2, time.Duration(i+1)*time.Minute)
		}
	}
	return c
}

func TestRequestsAreAFewListsPerNamespaceNeverPerHPA(t *testing.T) {
	// The VPAs' and ScaledObjects' lists are added only where the cluster serves them (not here).
	// Two lists of events: the HPAs' rescales and the Deployments' resizes, and the Lease a
	// kubectl hpa run deciding the namespace would hold (the evidence of the controller's memory,
	// with kube-controller-manager's leader Lease and the in-cluster run's, each read once).
	perNamespace := []string{"get leases.coordination.k8s.io", "list deployments.apps", "list events", "list events", "list poddisruptionbudgets.policy", "list pods", "list pods.metrics.k8s.io"}
	lease := []string{"get leases.coordination.k8s.io"}
	tests := []struct {
		name string
		args []string
		want map[string][]string
	}{
		{name: "-A lists the HPAs once, then six lists and a get per namespace", args: []string{"-A"},
			want: map[string][]string{"": {"list horizontalpodautoscalers.autoscaling"}, "a": perNamespace, "b": perNamespace, "c": perNamespace, "kube-system": lease, "kubectl-hpa": lease}},
		{name: "-n lists the namespace's HPAs, then the same six lists and a get", args: []string{"-n", "b"},
			want: map[string][]string{"b": slices.Sorted(slices.Values(append(slices.Clone(perNamespace), "list horizontalpodautoscalers.autoscaling"))), "kube-system": lease, "kubectl-hpa": lease}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := manyNamespaces().build(t)
			r := run(t, f, tc.args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			namespaces := 0
			for ns := range tc.want {
				if ns != "" && ns != "kube-system" && ns != "kubectl-hpa" {
					namespaces++
				}
			}
			if rows := strings.Count(r.stdout, "Deployment/"); rows != 5*namespaces {
				t.Errorf("%d rows:\n%s", rows, r.stdout)
			}
			got := requestsByNamespace(t, f)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			for ns, reqs := range got {
				if ns != "" && len(reqs) > 8 {
					t.Errorf("namespace %s cost %d requests, more than 8", ns, len(reqs))
				}
			}
		})
	}
}

// TestWouldBeIsExplainsDecision decides for every HPA of the golden cluster as explain does
// (its live source, evaluation.Evaluate from the cluster's state now, the same Explanation
// builder) and requires list's -o json to hold the same decision and verdict for each.
func TestWouldBeIsExplainsDecision(t *testing.T) {
	c := shop()
	r := run(t, c.build(t), "-A", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var got v1alpha1.List
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatal(err)
	}
	if got.APIVersion != "hpa.kubectl-hpa.io/v1alpha1" || got.Kind != "List" || len(got.Items) != 8 {
		t.Fatalf("got %s %s with %d items", got.APIVersion, got.Kind, len(got.Items))
	}
	f := c.build(t)
	o := &Options{Config: replicas.DefaultConfig(), clients: f.clients}
	src := live.Source(f.kube, f.clients.Scales, f.clients.Pods, f.clients.Metrics, o.Config)
	for _, item := range got.Items {
		ev, err := evaluation.Evaluate(context.Background(), src, item.Metadata.Namespace, item.Metadata.Name,
			evaluation.Options{Now: now, Config: o.Config, WithoutHistory: true})
		if err != nil {
			t.Fatal(err)
		}
		want := o.rowOf(ev).Explanation
		if diff := cmp.Diff(want.Decision, item.Decision); diff != "" {
			t.Errorf("%s/%s: list's decision differs from explain's path (-explain +list):\n%s", item.Metadata.Namespace, item.Metadata.Name, diff)
		}
		if want.Verdict.Constraint != item.Verdict.Constraint {
			t.Errorf("%s/%s: binding %s, explain's %s", item.Metadata.Namespace, item.Metadata.Name, item.Verdict.Constraint, want.Verdict.Constraint)
		}
	}
}

// forbiddenList refuses listing resource as RBAC does.
func forbiddenList(resource string) clienttesting.ReactionFunc {
	return func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() == "list" && a.GetResource().Resource == resource {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", errors.New("RBAC: access denied"))
		}
		return false, nil, nil
	}
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name    string
		reactor clienttesting.ReactionFunc
		args    []string
		code    int
		stdout  []string
		stderr  string
	}{
		{name: "listing the HPAs forbidden: nothing could be read", reactor: forbiddenList("horizontalpodautoscalers"), args: []string{"-A"},
			code: cmdutil.ExitForbidden, stderr: "listing horizontalpodautoscalers in all namespaces"},
		{name: "the pods forbidden: every row says it, the command succeeds", reactor: forbiddenList("pods"), args: []string{"-n", "shop"},
			code: 0, stdout: []string{"web        Deployment/web", "Blind"}},
		{name: "a named HPA missing beside one found is a row", args: []string{"-n", "shop", "web", "nope"},
			code: 0, stdout: []string{"nope   <unknown>", "NotEvaluated"}},
		{name: "no named HPA found", args: []string{"-n", "shop", "nope"},
			code: cmdutil.ExitHPANotFound, stderr: `no horizontalpodautoscaler named "nope" in namespace "shop"`},
		{name: "an empty namespace says so", args: []string{"-n", "ops", "-l", "team=none"},
			code: 0, stderr: "No resources found in ops namespace."},
		{name: "a namespace that does not exist", args: []string{"-n", "nowhere"},
			code: cmdutil.ExitWrongNamespace, stderr: `namespace "nowhere" does not exist`},
		{name: "-A with names", args: []string{"-A", "web"}, code: cmdutil.ExitUsage, stderr: "name them with -n NAMESPACE"},
		{name: "--sort-by a column that does not exist", args: []string{"--sort-by", "age"}, code: cmdutil.ExitUsage, stderr: `--sort-by "age" is not a column`},
		{name: "an unknown -o names wide among the formats", args: []string{"-o", "wdie"}, code: cmdutil.ExitUsage, stderr: `output format "wdie", allowed formats are: go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,kyaml,template,templatefile,wide,yaml`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := shop().build(t)
			if tc.reactor != nil {
				f.kube.PrependReactor("*", "*", tc.reactor)
			}
			r := run(t, f, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want exit %d, stderr with %q", r.code, r.stderr, tc.code, tc.stderr)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
				}
			}
		})
	}
}

func TestYAMLIsAVersionedListOfExplanations(t *testing.T) {
	r := run(t, shop().build(t), "-n", "shop", "-o", "yaml")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.HasPrefix(r.stdout, "apiVersion: hpa.kubectl-hpa.io/v1alpha1\nkind: List\nitems:\n") {
		t.Errorf("does not start as a List:\n%.200s", r.stdout)
	}
	if n := strings.Count(r.stdout, "\n  kind: Explanation\n"); n != 7 {
		t.Errorf("%d Explanations, want the 7 HPAs of shop", n)
	}
	// The HPA whose target is gone is an item with its error, as explain prints it.
	if !strings.Contains(r.stdout, "reason: TargetNotFound") {
		t.Errorf("no TargetNotFound error among the items")
	}
}

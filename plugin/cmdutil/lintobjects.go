package cmdutil

import (
	"context"
	"fmt"
	"sync"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/batch"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/lint/rules"
)

// The custom resources lint reads beside the HPAs, each only where discovery says the cluster
// serves it (a cluster without the CRD has none to check).
var (
	VPAResource          = schema.GroupVersionResource{Group: "autoscaling.k8s.io", Version: "v1", Resource: "verticalpodautoscalers"}
	ScaledObjectResource = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}
)

// lintWorkloadKinds are the scale target kinds plugin/lint/rules looks up.
var lintWorkloadKinds = []schema.GroupKind{
	{Group: "apps", Kind: "Deployment"},
	{Group: "apps", Kind: "StatefulSet"},
	{Group: "apps", Kind: "ReplicaSet"},
}

// WorkloadLister gives the workloads of a kind a caller has already listed in the namespace
// (batch.Namespace does), so that they are not listed twice; listed is false for a kind it
// did not list, err why its list failed.
type WorkloadLister interface {
	Workloads(gk schema.GroupKind) (objects []runtime.Object, listed bool, err error)
}

// WorkloadsFunc is a WorkloadLister of a function.
type WorkloadsFunc func(gk schema.GroupKind) (objects []runtime.Object, listed bool, err error)

// Workloads implements WorkloadLister.
func (f WorkloadsFunc) Workloads(gk schema.GroupKind) ([]runtime.Object, bool, error) { return f(gk) }

// LintReader reads, from a cluster, the objects plugin/lint/rules checks beside a namespace's
// HPAs: the Deployments, StatefulSets and ReplicaSets they target (one list per kind), the
// PodDisruptionBudgets (one list), and the VPAs and KEDA ScaledObjects (one list each, only
// when served). list and lint read them through it.
type LintReader struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	// Served are the group/versions (and groups) the cluster serves (ServedGroupVersions).
	Served map[string]bool
}

// Read reads the objects beside hpas (all of namespace), every list at the same time, the
// targeted workloads from have when it listed their kind (have may be nil). A list that
// fails (forbidden, say) is not an error: the rules run without its objects, and the note
// returned says which list and why.
func (r LintReader) Read(ctx context.Context, namespace string, hpas []*autoscalingv2.HorizontalPodAutoscaler, have WorkloadLister) (rules.Objects, []string) {
	var reads []func() listed
	for _, gk := range targetedKinds(hpas) {
		reads = append(reads, func() listed {
			if have != nil {
				if objs, ok, err := have.Workloads(gk); ok {
					return listed{gk.Kind, objs, err}
				}
			}
			objs, err := batch.ListWorkloads(ctx, r.Kube, namespace, gk)
			return listed{gk.Kind, objs, err}
		})
	}
	reads = append(reads, func() listed {
		list, err := r.Kube.PolicyV1().PodDisruptionBudgets(namespace).List(ctx, metav1.ListOptions{})
		return extracted("PodDisruptionBudget", list, err)
	})
	for _, gvr := range []schema.GroupVersionResource{VPAResource, ScaledObjectResource} {
		if r.Dynamic == nil || !r.Served[gvr.GroupVersion().String()] {
			continue
		}
		reads = append(reads, func() listed {
			list, err := r.Dynamic.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
			return extracted(gvr.GroupResource().String(), list, err)
		})
	}
	results := make([]listed, len(reads))
	var wg sync.WaitGroup
	for i, read := range reads {
		wg.Go(func() { results[i] = read() })
	}
	wg.Wait()
	objs := rules.Objects{HPAs: hpas}
	var notes []string
	// In a fixed order, so that the findings do not depend on which list came back first.
	for _, res := range results {
		if res.err != nil {
			notes = append(notes, fmt.Sprintf("the %s objects of namespace %q could not be listed, so the rules about them were not checked: %v", res.what, namespace, res.err))
			continue
		}
		for _, obj := range res.objects {
			objs.Add(obj)
		}
	}
	return objs, notes
}

// LintOptions are the lint rules' settings for objects read from a cluster (Manifests false)
// whose controller runs under cfg and which serves the APIs of served (HPA017; not checked when
// discovery knew nothing), as list and explain check them.
func LintOptions(cfg replicas.Config, served map[string]bool) rules.Options {
	opts := rules.DefaultOptions()
	if len(served) > 0 {
		opts.ServedAPIs = served
	}
	opts.Tolerance = cfg.Tolerance
	opts.DownscaleStabilizationWindow = cfg.DownscaleStabilizationWindow
	opts.PodLevelResources = cfg.PodLevelResources
	return opts
}

// listed is one list's objects, or why it failed.
type listed struct {
	what    string
	objects []runtime.Object
	err     error
}

// extracted are a list's items, or why the list failed.
func extracted(what string, list runtime.Object, err error) listed {
	if err != nil {
		return listed{what: what, err: err}
	}
	objs, err := meta.ExtractList(list)
	return listed{what, objs, err}
}

// targetedKinds are the kinds of lintWorkloadKinds that hpas target, in that order.
func targetedKinds(hpas []*autoscalingv2.HorizontalPodAutoscaler) []schema.GroupKind {
	var out []schema.GroupKind
	for _, gk := range lintWorkloadKinds {
		for _, h := range hpas {
			gv, err := schema.ParseGroupVersion(h.Spec.ScaleTargetRef.APIVersion)
			if err == nil && gv.Group == gk.Group && h.Spec.ScaleTargetRef.Kind == gk.Kind {
				out = append(out, gk)
				break
			}
		}
	}
	return out
}

// ServedGroupVersions returns the group/versions and the groups the (cached) discovery client
// knows; empty when discovery fails, which only leaves out what depends on them.
func ServedGroupVersions(dc discovery.DiscoveryInterface) map[string]bool {
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

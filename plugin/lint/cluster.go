package lint

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/lint/rules"
)

// parallelNamespaces bounds how many namespaces are read at once, as list's.
const parallelNamespaces = 8

// readCluster lists the HPAs (the only read whose failure fails the command) and reads the
// objects beside them namespace by namespace through the reader list and explain share. The
// cluster's served metrics APIs feed HPA017. Every HPA of the namespace is read, so that
// the rules check the named ones against the others (HPA011), as explain does; checked says
// which are reported.
func (o *Options) readCluster(ctx context.Context) (rules.Objects, func(rules.ObjectRef) bool, error) {
	c, err := o.newClients()
	if err != nil {
		return rules.Objects{}, nil, err
	}
	hpas, err := o.listHPAs(ctx, c)
	if err != nil {
		return rules.Objects{}, nil, err
	}
	named := func(name string) bool { return len(o.Names) == 0 || slices.Contains(o.Names, name) }
	checked := func(ref rules.ObjectRef) bool { return named(ref.Name) }
	served := cmdutil.ServedGroupVersions(c.Discovery)
	o.Lint.Manifests = false
	if len(served) > 0 {
		// Discovery that failed knows nothing: HPA017 is then not checked rather than
		// reporting every metric.
		o.Lint.ServedAPIs = served
	}
	byNS := map[string][]*autoscalingv2.HorizontalPodAutoscaler{}
	for _, h := range hpas {
		byNS[h.Namespace] = append(byNS[h.Namespace], h)
	}
	// A namespace without a checked HPA has nothing to report.
	maps.DeleteFunc(byNS, func(_ string, list []*autoscalingv2.HorizontalPodAutoscaler) bool {
		return !slices.ContainsFunc(list, func(h *autoscalingv2.HorizontalPodAutoscaler) bool { return named(h.Name) })
	})
	reader := cmdutil.LintReader{Kube: c.Kube, Dynamic: c.Dynamic, Served: served}
	read := map[string]rules.Objects{}
	notes := map[string][]string{}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	sem := make(chan struct{}, parallelNamespaces)
	for ns, list := range byNS {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			objs, n := reader.Read(ctx, ns, list, nil)
			mu.Lock()
			defer mu.Unlock()
			read[ns], notes[ns] = objs, n
		})
	}
	wg.Wait()
	// In namespace order, so that the report does not depend on which namespace came first.
	var all rules.Objects
	for _, ns := range slices.Sorted(maps.Keys(read)) {
		objs := read[ns]
		all.HPAs = append(all.HPAs, objs.HPAs...)
		all.Deployments = append(all.Deployments, objs.Deployments...)
		all.StatefulSets = append(all.StatefulSets, objs.StatefulSets...)
		all.ReplicaSets = append(all.ReplicaSets, objs.ReplicaSets...)
		all.PodDisruptionBudgets = append(all.PodDisruptionBudgets, objs.PodDisruptionBudgets...)
		all.VerticalPodAutoscalers = append(all.VerticalPodAutoscalers, objs.VerticalPodAutoscalers...)
		all.ScaledObjects = append(all.ScaledObjects, objs.ScaledObjects...)
		for _, n := range notes[ns] {
			fmt.Fprintf(o.ErrOut, "warning: %s\n", n)
		}
	}
	return all, checked, nil
}

// listHPAs lists the HPAs of the namespace (every namespace with -A) by namespace and name:
// one request. A name given that none has is an error when none of the names is found, a
// warning otherwise.
func (o *Options) listHPAs(ctx context.Context, c *cmdutil.Clients) ([]*autoscalingv2.HorizontalPodAutoscaler, error) {
	ns := o.Namespace
	if o.AllNamespaces {
		ns = metav1.NamespaceAll
	}
	list, err := c.Kube.AutoscalingV2().HorizontalPodAutoscalers(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		doing := fmt.Sprintf("listing horizontalpodautoscalers in namespace %q", ns)
		if o.AllNamespaces {
			doing = "listing horizontalpodautoscalers in all namespaces"
		}
		return nil, cmdutil.APIExitError(doing, err)
	}
	if len(list.Items) == 0 && !o.AllNamespaces {
		if _, nsErr := c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); nsErr != nil {
			if err := cmdutil.NamespaceMissing(nsErr, ns, o.ExplicitNamespace); err != nil {
				return nil, err
			}
		}
	}
	out := make([]*autoscalingv2.HorizontalPodAutoscaler, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	var missing []string
	for _, n := range o.Names {
		if !slices.ContainsFunc(out, func(h *autoscalingv2.HorizontalPodAutoscaler) bool { return h.Name == n }) {
			missing = append(missing, n)
		}
	}
	if len(o.Names) > 0 && len(missing) == len(o.Names) {
		return nil, &cmdutil.ExitError{Code: cmdutil.ExitHPANotFound, Err: fmt.Errorf("no horizontalpodautoscaler named %s in namespace %q (kubectl get hpa -n %s lists them)", strings.Join(o.Names, ", "), ns, ns)}
	}
	for _, n := range missing {
		fmt.Fprintf(o.ErrOut, "warning: no horizontalpodautoscaler named %q in namespace %q\n", n, ns)
	}
	slices.SortFunc(out, func(a, b *autoscalingv2.HorizontalPodAutoscaler) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

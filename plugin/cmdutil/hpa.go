package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// OneHPAName requires exactly one argument, the HPA's NAME (or hpa/NAME, as kubectl
// accepts), and refuses anything that cannot be an object name before the cluster is asked.
func OneHPAName(_ *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return UsageErrorf("an HPA NAME is required: kubectl hpa explain NAME [-n NAMESPACE] (kubectl get hpa -n NAMESPACE lists them)")
	case len(args) > 1:
		return UsageErrorf("unexpected argument %q: kubectl hpa explain takes one HPA NAME", args[1])
	}
	name := HPANameOf(args[0])
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return UsageErrorf("%q is not an HPA name: %s (give the NAME that kubectl get hpa -n NAMESPACE lists)", args[0], strings.Join(errs, "; "))
	}
	return nil
}

// HPANameOf strips a kubectl-style resource prefix (hpa/web, horizontalpodautoscaler/web).
func HPANameOf(arg string) string {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok {
		return arg
	}
	switch strings.ToLower(kind) {
	case "hpa", "horizontalpodautoscaler", "horizontalpodautoscalers", "horizontalpodautoscaler.autoscaling", "horizontalpodautoscalers.autoscaling":
		return name
	}
	return arg
}

// HPAGetError turns a failed GET of HPA namespace/name into an actionable error; on NotFound
// it looks (only on this error path) whether the server at host is an API server, whether
// the namespace exists and whether the HPA lives elsewhere. explicitNS is whether -n named
// the namespace.
func HPAGetError(ctx context.Context, kube kubernetes.Interface, host, namespace string, explicitNS bool, name string, err error) error {
	doing := fmt.Sprintf("getting horizontalpodautoscaler %q in namespace %q", name, namespace)
	if !apierrors.IsNotFound(err) {
		return APIExitError(doing, err)
	}
	// A server that is not a Kubernetes API server answers 404 to everything.
	if err := CheckAPIServer(kube.Discovery(), host); err != nil {
		return err
	}
	_, nsErr := kube.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	missing := NamespaceMissing(nsErr, namespace, explicitNS)
	if elsewhere := namespacesOf(ctx, kube, name, namespace); len(elsewhere) > 0 {
		notHere := fmt.Sprintf("horizontalpodautoscaler %q not found in namespace %q, but it", name, namespace)
		if missing != nil {
			notHere = namespaceMissing(namespace, explicitNS) + fmt.Sprintf(", but horizontalpodautoscaler %q", name)
		}
		return &ExitError{Code: ExitWrongNamespace, Err: fmt.Errorf("%s exists in namespace %s: pass -n %s", notHere, strings.Join(elsewhere, ", "), elsewhere[0])}
	}
	if missing != nil {
		return missing
	}
	return &ExitError{Code: ExitHPANotFound, Err: fmt.Errorf("horizontalpodautoscaler %q not found in namespace %q: list them with kubectl get hpa -n %s", name, namespace, namespace)}
}

// namespacesOf lists, sorted, the namespaces other than namespace that hold an HPA called
// name; none when the user may not list HPAs in every namespace.
func namespacesOf(ctx context.Context, kube kubernetes.Interface, name, namespace string) []string {
	list, err := kube.AutoscalingV2().HorizontalPodAutoscalers(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		return nil
	}
	var elsewhere []string
	for _, h := range list.Items {
		if h.Name == name && h.Namespace != namespace {
			elsewhere = append(elsewhere, h.Namespace)
		}
	}
	slices.Sort(elsewhere)
	return elsewhere
}

// TargetExitError classifies a scale read failure: missing object, unscalable kind, or RBAC.
func TargetExitError(hpa *autoscalingv2.HorizontalPodAutoscaler, err error, dc discovery.DiscoveryInterface) *ExitError {
	ref := hpa.Spec.ScaleTargetRef
	doing := fmt.Sprintf("reading the scale of %s %q (spec.scaleTargetRef of horizontalpodautoscaler %s/%s)", ref.Kind, ref.Name, hpa.Namespace, hpa.Name)
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return APIExitError(doing, err)
	}
	notScalable := &ExitError{Code: ExitTargetNotScalable, Err: fmt.Errorf("%s: %w: scaleTargetRef must name a kind with a scale subresource (Deployment, StatefulSet, ReplicaSet or a custom resource with /scale)", doing, err)}
	var se *replicas.ScaleError
	if errors.As(err, &se) && se.Stage != replicas.ScaleErrorGet {
		return notScalable
	}
	if apierrors.IsNotFound(err) {
		if hasScale, known := scaleSubresourceServed(dc, ref); known && !hasScale {
			return notScalable
		}
		return &ExitError{Code: ExitTargetNotFound, Err: fmt.Errorf("%s: %w: create it or fix spec.scaleTargetRef", doing, err)}
	}
	return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%s: %w", doing, err)}
}

// scaleSubresourceServed looks in (cached) discovery whether ref's kind has /scale.
func scaleSubresourceServed(dc discovery.DiscoveryInterface, ref autoscalingv2.CrossVersionObjectReference) (hasScale, known bool) {
	if dc == nil {
		return false, false
	}
	list, err := dc.ServerResourcesForGroupVersion(ref.APIVersion)
	if err != nil {
		return false, false
	}
	resource := ""
	for _, r := range list.APIResources {
		if r.Kind == ref.Kind && !strings.Contains(r.Name, "/") {
			resource = r.Name
		}
	}
	if resource == "" {
		return false, true
	}
	for _, r := range list.APIResources {
		if r.Name == resource+"/scale" {
			return true, true
		}
	}
	return false, true
}

// MaxNamedHPAs is how many HPAs a message about a fleet names (SomeNames).
const MaxNamedHPAs = 10

// SomeNames joins names for a message, the first most of them and how many more: a
// recording of a fleet holds thousands of HPAs, and a line naming each helps nobody.
func SomeNames(names []string, most int) string {
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:most], ", "), len(names)-most)
}

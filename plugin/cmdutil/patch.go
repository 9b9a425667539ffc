package cmdutil

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	autoscalingv2client "k8s.io/client-go/kubernetes/typed/autoscaling/v2"
)

// statusOnlyRetries is how many times PatchSpec re-reads an HPA whose resourceVersion moved
// while its spec did not (the HPA controller writes status every sync that changes it, and a
// person or a search outlasts syncs) before it gives up.
const statusOnlyRetries = 3

// SpecPatch is a JSON merge patch of an HPA's spec, and who writes it: for messages, the
// command's words (What: "--apply"), what to do after a conflict (Again: "tune it again as it
// is now") and the page on the permission it needs (Doc).
type SpecPatch struct {
	Patch        map[string]any
	FieldManager string
	What, Again  string
	Doc          string
}

// PatchSpec writes p to the HPA as read: a server dry run, then the patch, both carrying the
// resourceVersion read, so that the API server refuses them if the HPA changed. A change of its
// status (or metadata) alone is read again, and the patch sent at the new resourceVersion; a
// change of its spec, by anyone, refuses the patch with who made it. Nothing is written on a
// failure. It returns the HPA as patched and the resourceVersion the patch carried.
func PatchSpec(ctx context.Context, kube kubernetes.Interface, read *autoscalingv2.HorizontalPodAutoscaler, p SpecPatch) (*autoscalingv2.HorizontalPodAutoscaler, string, error) {
	hpas := kube.AutoscalingV2().HorizontalPodAutoscalers(read.Namespace)
	rv := read.ResourceVersion
	for attempt := 0; ; attempt++ {
		updated, err := patchTwice(ctx, hpas, read.Name, p, rv)
		if err == nil {
			return updated, rv, nil
		}
		if apierrors.IsForbidden(err) {
			return nil, "", &ExitError{Code: ExitForbidden, Err: fmt.Errorf(
				"%s: nothing written: %w (%s needs patch on horizontalpodautoscalers (autoscaling) in namespace %q besides what kubectl-hpa-explain grants; see %s)", p.What, err, p.What, read.Namespace, p.Doc)}
		}
		if !apierrors.IsConflict(err) {
			return nil, "", APIExitError(fmt.Sprintf("%s: patching horizontalpodautoscaler %s/%s (nothing written)", p.What, read.Namespace, read.Name), err)
		}
		now, gerr := hpas.Get(ctx, read.Name, metav1.GetOptions{})
		if gerr != nil {
			return nil, "", APIExitError(fmt.Sprintf("%s: reading horizontalpodautoscaler %s/%s again after a conflict (nothing written)", p.What, read.Namespace, read.Name), gerr)
		}
		if !apiequality.Semantic.DeepEqual(now.Spec, read.Spec) || attempt == statusOnlyRetries {
			return nil, "", &ExitError{Code: ExitFailure, Err: fmt.Errorf(
				"%s: nothing written: HPA %s/%s was changed since it was read (resourceVersion %s, now %s)%s: %s",
				p.What, read.Namespace, read.Name, read.ResourceVersion, now.ResourceVersion, ChangedBy(now), p.Again)}
		}
		// Only its status (or metadata) moved: the patch still applies to its spec.
		rv = now.ResourceVersion
	}
}

// patchTwice sends p with resourceVersion rv as a server dry run, then for real.
func patchTwice(ctx context.Context, hpas autoscalingv2client.HorizontalPodAutoscalerInterface, name string, p SpecPatch, rv string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	body := map[string]any{"metadata": map[string]any{"resourceVersion": rv}}
	for k, v := range p.Patch {
		body[k] = v
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	if _, err := hpas.Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: p.FieldManager}); err != nil {
		return nil, err
	}
	return hpas.Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: p.FieldManager})
}

// ChangedBy names the manager that last wrote h's spec, as managedFields tell, with when;
// "" when they do not.
func ChangedBy(h *autoscalingv2.HorizontalPodAutoscaler) string {
	var (
		who    string
		latest time.Time
	)
	for _, e := range h.ManagedFields {
		if e.Subresource != "" || e.Time == nil {
			continue
		}
		if who == "" || e.Time.After(latest) {
			who, latest = e.Manager, e.Time.Time
		}
	}
	if who == "" {
		return ""
	}
	return fmt.Sprintf(" by %s at %s", who, latest.UTC().Format(time.RFC3339))
}

package tune

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	autoscalingv2client "k8s.io/client-go/kubernetes/typed/autoscaling/v2"

	"github.com/kubectl-hpa/kubectl-hpa/controller/history/annotation"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

// statusOnlyRetries is how many times --apply re-reads an HPA whose resourceVersion moved
// while its spec did not (the HPA controller writes status every sync that changes it, and
// a search outlasts syncs) before it gives up.
const statusOnlyRetries = 3

// apply writes r's patch to the HPA as read, through kube: refused (nothing written) when
// the recommendation is not one to write; else a server dry run, then the patch, both
// carrying the resourceVersion read so that the API server refuses them if the HPA changed.
func apply(ctx context.Context, kube kubernetes.Interface, read *autoscalingv2.HorizontalPodAutoscaler, r *report, out io.Writer) error {
	if why := r.notApplicable(); len(why) > 0 {
		return cmdutil.UsageErrorf("--apply: nothing written: %s", strings.Join(why, "; and "))
	}
	if r.patch == nil {
		_, err := fmt.Fprintf(out, "Applied: nothing to write: the HPA as it is is the recommendation.\n")
		return err
	}
	hpas := kube.AutoscalingV2().HorizontalPodAutoscalers(read.Namespace)
	rv := read.ResourceVersion
	for attempt := 0; ; attempt++ {
		updated, err := patchTwice(ctx, hpas, read.Name, r.patch, rv)
		if err == nil {
			_, err = fmt.Fprintf(out, "Applied: %s/%s patched as field manager %s after a server dry run; resourceVersion %s, now %s.\n",
				read.Namespace, read.Name, annotation.FieldManager, rv, updated.ResourceVersion)
			return err
		}
		if apierrors.IsForbidden(err) {
			return &cmdutil.ExitError{Code: cmdutil.ExitForbidden, Err: fmt.Errorf(
				"--apply: nothing written: %w (--apply needs patch on horizontalpodautoscalers (autoscaling) in namespace %q besides what kubectl-hpa-explain grants; see docs/tune.md)", err, read.Namespace)}
		}
		if !apierrors.IsConflict(err) {
			return cmdutil.APIExitError(fmt.Sprintf("--apply: patching horizontalpodautoscaler %s/%s (nothing written)", read.Namespace, read.Name), err)
		}
		now, gerr := hpas.Get(ctx, read.Name, metav1.GetOptions{})
		if gerr != nil {
			return cmdutil.APIExitError(fmt.Sprintf("--apply: reading horizontalpodautoscaler %s/%s again after a conflict (nothing written)", read.Namespace, read.Name), gerr)
		}
		if !apiequality.Semantic.DeepEqual(now.Spec, read.Spec) || attempt == statusOnlyRetries {
			return &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf(
				"--apply: nothing written: HPA %s/%s was changed since it was read (resourceVersion %s, now %s)%s: tune it again as it is now",
				read.Namespace, read.Name, read.ResourceVersion, now.ResourceVersion, changedBy(now))}
		}
		// Only its status (or metadata) moved: the recommendation still applies to its spec.
		rv = now.ResourceVersion
	}
}

// patchTwice sends patch with resourceVersion rv as a server dry run, then for real.
func patchTwice(ctx context.Context, hpas autoscalingv2client.HorizontalPodAutoscalerInterface, name string, patch map[string]any, rv string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	body := map[string]any{"metadata": map[string]any{"resourceVersion": rv}}
	for k, v := range patch {
		body[k] = v
	}
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	if _, err := hpas.Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: annotation.FieldManager}); err != nil {
		return nil, err
	}
	return hpas.Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: annotation.FieldManager})
}

// notApplicable are why the recommendation must not be written (every reason, so that none
// hides another), none when it may be: --apply refuses it, the report and the Tuning say so.
func (r *report) notApplicable() []string {
	var why []string
	if !r.res.Met {
		why = append(why, fmt.Sprintf("no %s meets the constraints (%s): the recommendation is the closest, not a safe spec", r.playedWords(), r.constraintWords()))
	}
	if len(r.problems) > 0 {
		why = append(why, "the load cannot support the recommendation: "+strings.Join(r.problems, "; "))
	}
	return why
}

// changedBy names the manager that last wrote h's spec, as managedFields tell, with when;
// "" when they do not.
func changedBy(h *autoscalingv2.HorizontalPodAutoscaler) string {
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

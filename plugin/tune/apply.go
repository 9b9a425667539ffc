package tune

import (
	"context"
	"fmt"
	"io"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-hpa/kubectl-hpa/controller/history/annotation"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

// apply writes r's patch to the HPA as read, through kube: refused (nothing written) when
// the recommendation is not one to write; else cmdutil.PatchSpec's server dry run, then the
// patch, at the resourceVersion read.
func apply(ctx context.Context, kube kubernetes.Interface, read *autoscalingv2.HorizontalPodAutoscaler, r *report, out io.Writer) error {
	if why := r.notApplicable(); len(why) > 0 {
		return cmdutil.UsageErrorf("--apply: nothing written: %s", strings.Join(why, "; and "))
	}
	if r.patch == nil {
		_, err := fmt.Fprintf(out, "Applied: nothing to write: the HPA as it is is the recommendation.\n")
		return err
	}
	updated, at, err := cmdutil.PatchSpec(ctx, kube, read, cmdutil.SpecPatch{
		Patch: r.patch, FieldManager: annotation.FieldManager,
		What: "--apply", Again: "tune it again as it is now", Doc: "docs/tune.md",
	})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "Applied: %s/%s patched as field manager %s after a server dry run; resourceVersion %s, now %s.\n",
		read.Namespace, read.Name, annotation.FieldManager, at, updated.ResourceVersion)
	return err
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

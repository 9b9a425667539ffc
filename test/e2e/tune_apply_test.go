//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/validation"
	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// TestTuneApplyPatchesTheRealHPAOnlyAtTheResourceVersionItRead: kubectl hpa tune --apply,
// through the real kubectl, on the HPA web of the real API server (min 1, max 10, cpu at 50%,
// two pods requesting 100m), tuned on the spike train of docs/tune.md (--load: the cheapest
// source; the search is six specs, for cost, with no constraint, so that the recommendation
// is one to apply):
//   - another manager changes the HPA's spec while tune's patch is in flight (held in a
//     validating webhook after its server dry run passed): the API server refuses the patch
//     (409), tune exits 1 saying so, and the spec is the other manager's;
//   - then, nobody else writing, tune sends a server dry run then the patch, both as field
//     manager kubectl-hpa and both carrying the resourceVersion the test read before tune
//     ran (the audit log holds HPA patches' bodies), and the HPA's spec afterwards is the
//     one read with tune's printed patch applied, as the API server defaults it.
func TestTuneApplyPatchesTheRealHPAOnlyAtTheResourceVersionItRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Now()
	ns := namespace(t, "tune-apply")
	createDeployment(t, ns, deploymentSpec{replicas: 2})
	createHPA(t, ns, hpaSpec{})
	hpas := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns)
	const user = "e2e:tune-apply"
	k := pluginAs(t, user)
	hold := newLifeHold(user)
	defer hold.Release()
	holdingWebhook(t, ns, "tune", admissionregistrationv1.Rule{APIGroups: []string{"autoscaling"}, APIVersions: []string{"v2"}, Resources: []string{"horizontalpodautoscalers"}},
		func(r *admissionv1.AdmissionRequest) bool {
			return r.UserInfo.Username == user && (r.DryRun == nil || !*r.DryRun)
		}, hold,
		func(ctx context.Context) error {
			h, err := hpas.Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			h.Spec.MaxReplicas++
			_, err = hpas.Update(ctx, h, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		})
	// tune reads the pods' requests from the newest pod.
	eventually(t, time.Minute, "web's pods exist", func(context.Context) error {
		if n := len(podsOf(t, ns, map[string]string{"app": "web"})); n == 0 {
			return errors.New("no pod yet")
		}
		return nil
	})
	args := []string{"hpa", "tune", "web", "-n", ns, "--load", filepath.Join("..", "..", "plugin", "tune", "testdata", "spikes.csv"),
		"--candidates", "6", "--objective", "cost", "--max-above-target", "none", "-o", "json", "--apply"}
	// tuneApply runs tune --apply; it may run on a goroutine of its own (no t).
	tuneApply := func() tuneApplyRun {
		var stdout, stderr bytes.Buffer
		cmd := k.Command(ctx, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		r := tuneApplyRun{began: time.Now()}
		if err := cmd.Run(); err != nil {
			ee, ok := errors.AsType[*exec.ExitError](err)
			if !ok {
				r.err = err
			} else {
				r.code = ee.ExitCode()
			}
		}
		r.took, r.stdout, r.stderr = time.Since(r.began), stdout.Bytes(), stderr.String()
		return r
	}
	// patches are tune's writes since mark, each once its response is logged (the API server
	// may log it after the client has its answer).
	patches := func(t *testing.T, mark cluster.AuditMark) []cluster.AuditRequest {
		t.Helper()
		var reqs []cluster.AuditRequest
		eventually(t, 10*time.Second, "tune's writes complete in the audit log", func(context.Context) error {
			var err error
			if reqs, err = shared.AuditSince(mark, cluster.AuditFilter{User: user, Namespace: ns, WritesOnly: true}); err != nil {
				return err
			}
			for _, r := range reqs {
				if r.Completed.IsZero() {
					return fmt.Errorf("%s not complete", r)
				}
			}
			return nil
		})
		for _, r := range reqs {
			if r.Verb != "patch" || r.Resource != "horizontalpodautoscalers" || r.Name != "web" {
				t.Errorf("tune wrote %s", r)
			}
		}
		return reqs
	}

	t.Run("another manager changes the spec while the patch is in flight: refused, nothing written", func(t *testing.T) {
		read, err := hpas.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mark, err := shared.AuditMark()
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan tuneApplyRun, 1)
		go func() { done <- tuneApply() }()
		select {
		case what := <-hold.arrived:
			t.Logf("holding tune's patch of %s in admission", what)
		case r := <-done:
			t.Fatalf("tune exited %d before its patch was held (%v): %s", r.code, r.err, r.stderr)
		case <-time.After(time.Minute):
			t.Fatal("tune's patch did not reach the webhook in a minute")
		}
		other := read.DeepCopy()
		other.Spec.MaxReplicas = 12
		changed, err := hpas.Update(ctx, other, metav1.UpdateOptions{FieldManager: "e2e-other-manager"})
		if err != nil {
			t.Fatal(err)
		}
		hold.Release()
		r := <-done
		r.tuning(t)
		want := fmt.Sprintf("error: --apply: nothing written: HPA %s/web was changed since it was read (resourceVersion %s, now %s)", ns, read.ResourceVersion, changed.ResourceVersion)
		if r.code != 1 || !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("exit %d, stderr %q; want 1 and one line starting %q", r.code, r.stderr, want)
		}
		var got []string
		for _, p := range patches(t, mark) {
			got = append(got, fmt.Sprintf("%s %d", auditPatchWords(t, p), p.Code))
		}
		rv := read.ResourceVersion
		if wantCalls := []string{"dry run at " + rv + " by kubectl-hpa 200", "patch at " + rv + " by kubectl-hpa 409"}; !slices.Equal(got, wantCalls) {
			t.Errorf("tune's HPA writes %q, want %q", got, wantCalls)
		}
		now, err := hpas.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if now.ResourceVersion != changed.ResourceVersion || !apiequality.Semantic.DeepEqual(now.Spec, changed.Spec) {
			t.Errorf("the HPA is at resourceVersion %s with spec %+v; want the other manager's, %s %+v", now.ResourceVersion, now.Spec, changed.ResourceVersion, changed.Spec)
		}
	})

	t.Run("nobody else writes: a server dry run, then the patch, both at the resourceVersion read", func(t *testing.T) {
		read, err := hpas.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mark, err := shared.AuditMark()
		if err != nil {
			t.Fatal(err)
		}
		r := tuneApply()
		tuning := r.tuning(t)
		now, err := hpas.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("Applied: %s/web patched as field manager kubectl-hpa after a server dry run; resourceVersion %s, now %s.\n", ns, read.ResourceVersion, now.ResourceVersion)
		if r.code != 0 || r.stderr != want {
			t.Errorf("exit %d, stderr %q; want 0 and %q", r.code, r.stderr, want)
		}
		printed := compactJSON(t, tuning.Patch)
		var got []string
		for _, p := range patches(t, mark) {
			got = append(got, fmt.Sprintf("%s %d", auditPatchWords(t, p), p.Code))
			if body := auditPatchBody(t, p); !bytes.Equal(body, printed) {
				t.Errorf("%s sent %s, tune printed the patch %s", p, body, printed)
			}
		}
		rv := read.ResourceVersion
		if wantCalls := []string{"dry run at " + rv + " by kubectl-hpa 200", "patch at " + rv + " by kubectl-hpa 200"}; !slices.Equal(got, wantCalls) {
			t.Errorf("tune's HPA writes %q, want %q", got, wantCalls)
		}
		// The spec read with the printed patch applied, as the API server defaults it.
		tuned := read.DeepCopy()
		if err := json.Unmarshal(tuning.Patch, tuned); err != nil {
			t.Fatal(err)
		}
		for _, h := range []*autoscalingv2.HorizontalPodAutoscaler{tuned, now} {
			validation.Default(h)
		}
		if !apiequality.Semantic.DeepEqual(now.Spec, tuned.Spec) {
			t.Errorf("the HPA's spec after tune --apply (%s):\n%+v\nwant the spec read with the patch %s:\n%+v", strings.Join(tuning.Recommended.Changes, ","), now.Spec, printed, tuned.Spec)
		}
		t.Logf("tune --apply wrote %s (%s) at resourceVersion %s, now %s", printed, strings.Join(tuning.Recommended.Changes, ","), rv, now.ResourceVersion)
	})
	t.Logf("took %s", time.Since(start).Round(100*time.Millisecond))
}

// tuneApplyRun is one run of tune -o json --apply.
type tuneApplyRun struct {
	began  time.Time
	took   time.Duration
	code   int
	stdout []byte
	stderr string
	err    error
}

// tuning is the Tuning the run printed, which must recommend a patch to apply.
func (r tuneApplyRun) tuning(t *testing.T) *v1alpha1.Tuning {
	t.Helper()
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Logf("tune --apply: exit %d after %s; stderr: %s", r.code, r.took.Round(time.Millisecond), strings.TrimSpace(r.stderr))
	tuning := &v1alpha1.Tuning{}
	if err := json.Unmarshal(r.stdout, tuning); err != nil {
		t.Fatalf("decoding the Tuning: %v\n%s", err, r.stdout)
	}
	if !tuning.Applicable || len(tuning.Patch) == 0 {
		t.Fatalf("tune recommends %v (applicable %v: %q), want a patch to apply", tuning.Recommended.Changes, tuning.Applicable, tuning.NotApplicable)
	}
	return tuning
}

// compactJSON is data decoded and encoded again: keys sorted, no spaces.
func compactJSON(t *testing.T, data []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%q: %v", data, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// auditPatchWords is an HPA patch as the audit log holds it: a dry run or a patch, at the
// resourceVersion its body carries, by the field manager its URI names.
func auditPatchWords(t *testing.T, r cluster.AuditRequest) string {
	t.Helper()
	var body struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(r.RequestObject, &body); err != nil {
		t.Fatalf("%s: its body %q: %v", r, r.RequestObject, err)
	}
	kind := "patch"
	if strings.Contains(r.RequestURI, "dryRun=All") {
		kind = "dry run"
	}
	manager := "no field manager"
	if _, rest, ok := strings.Cut(r.RequestURI, "fieldManager="); ok {
		manager, _, _ = strings.Cut(rest, "&")
	}
	return fmt.Sprintf("%s at %s by %s", kind, body.Metadata.ResourceVersion, manager)
}

// auditPatchBody is an HPA patch's body without the resourceVersion tune adds: the patch
// tune printed, compacted as the Tuning holds it.
func auditPatchBody(t *testing.T, r cluster.AuditRequest) []byte {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(r.RequestObject, &body); err != nil {
		t.Fatalf("%s: its body %q: %v", r, r.RequestObject, err)
	}
	delete(body, "metadata")
	out, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

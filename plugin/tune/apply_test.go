package tune

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/tune/search"
)

var hpaGVR = autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers")

// patchCall is one HPA patch the fake API server received.
type patchCall struct {
	dryRun          bool
	resourceVersion string
	fieldManager    string
}

func (p patchCall) String() string {
	kind := "write"
	if p.dryRun {
		kind = "dry run"
	}
	return fmt.Sprintf("%s at resourceVersion %s by %s", kind, p.resourceVersion, p.fieldManager)
}

// hpaServer serves the HPA shop/web's gets and patches as kube-apiserver would, from its
// own copy (the fake clientset's tracker neither checks resourceVersions nor keeps
// managedFields as given): a merge patch whose metadata.resourceVersion is not the stored
// one is refused with Conflict, a dry run stores nothing, a write moves the resourceVersion
// on. before, when set, runs ahead of the nth patch: another writer between tune's read and
// its patch.
type hpaServer struct {
	t      *testing.T
	stored *autoscalingv2.HorizontalPodAutoscaler
	before func(n int, h *autoscalingv2.HorizontalPodAutoscaler)
	calls  []patchCall
}

func serveHPA(t *testing.T, kube *kubefake.Clientset, hpa *autoscalingv2.HorizontalPodAutoscaler, before func(n int, h *autoscalingv2.HorizontalPodAutoscaler)) *hpaServer {
	s := &hpaServer{t: t, stored: hpa.DeepCopy(), before: before}
	kube.PrependReactor("get", "horizontalpodautoscalers", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, s.stored.DeepCopy(), nil
	})
	kube.PrependReactor("patch", "horizontalpodautoscalers", s.patch)
	return s
}

func (s *hpaServer) patch(a clienttesting.Action) (bool, runtime.Object, error) {
	pa := a.(clienttesting.PatchActionImpl)
	if s.before != nil {
		s.before(len(s.calls), s.stored)
	}
	var patch map[string]any
	if err := json.Unmarshal(pa.GetPatch(), &patch); err != nil {
		return true, nil, apierrors.NewBadRequest(err.Error())
	}
	rv, _, _ := unstructured.NestedString(patch, "metadata", "resourceVersion")
	call := patchCall{dryRun: slices.Equal(pa.PatchOptions.DryRun, []string{metav1.DryRunAll}), resourceVersion: rv, fieldManager: pa.PatchOptions.FieldManager}
	s.calls = append(s.calls, call)
	if rv != "" && rv != s.stored.ResourceVersion {
		return true, nil, apierrors.NewConflict(hpaGVR.GroupResource(), pa.GetName(), fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	doc, err := json.Marshal(s.stored)
	if err != nil {
		return true, nil, err
	}
	var m any
	if err := json.Unmarshal(doc, &m); err != nil {
		return true, nil, err
	}
	merged, err := json.Marshal(mergePatch(m, patch))
	if err != nil {
		return true, nil, err
	}
	h := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := json.Unmarshal(merged, h); err != nil {
		return true, nil, apierrors.NewBadRequest(err.Error())
	}
	h.ResourceVersion = nextVersion(s.t, s.stored.ResourceVersion)
	if !call.dryRun {
		s.stored = h
	}
	return true, h.DeepCopy(), nil
}

// mergePatch applies a JSON merge patch (RFC 7386) to doc.
func mergePatch(doc, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	dm, ok := doc.(map[string]any)
	if !ok {
		dm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(dm, k)
			continue
		}
		dm[k] = mergePatch(dm[k], v)
	}
	return dm
}

func nextVersion(t *testing.T, rv string) string {
	n, err := strconv.Atoi(rv)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return strconv.Itoa(n + 1)
}

// otherWriter changes the stored HPA as another client would, once, before the first patch.
func otherWriter(t *testing.T, change func(h *autoscalingv2.HorizontalPodAutoscaler)) func(n int, h *autoscalingv2.HorizontalPodAutoscaler) {
	return func(n int, h *autoscalingv2.HorizontalPodAutoscaler) {
		if n > 0 {
			return
		}
		change(h)
		h.ResourceVersion = nextVersion(t, h.ResourceVersion)
	}
}

// The cluster's HPA shop/web (cpu at 80%, min 1, max 10, resourceVersion 42, four pods
// requesting 500m) under the spike train, searched cheaply: the cheapest of six specs, with no
// constraint, is not the current one (cpu=108%).
var applyArgs = []string{"web", "-n", "shop", "--load", td("spikes.csv"), "--candidates", "6", "--objective", "cost", "--max-above-target", "none", "--apply"}

func TestTuneApplyPatchesOnlyTheSpecItRead(t *testing.T) {
	edited := metav1.NewTime(cmdtest.Now.Add(-time.Minute))
	for _, tc := range []struct {
		name string
		// other changes the HPA between tune's read and its first patch (nil: nobody does).
		other     func(h *autoscalingv2.HorizontalPodAutoscaler)
		wantCode  int
		wantCalls []string
		// wantLine is in the one line tune ends with (stdout when applied, stderr when refused).
		wantLine string
		// wantSpec says the HPA's spec afterwards is tune's (else it is as read, or the other writer's).
		wantTuned bool
	}{
		{
			name:      "nobody else writes: a dry run then the patch, both at the resourceVersion read",
			wantCalls: []string{"dry run at resourceVersion 42 by kubectl-hpa", "write at resourceVersion 42 by kubectl-hpa"},
			wantLine:  "Applied: shop/web patched as field manager kubectl-hpa after a server dry run; resourceVersion 42, now 43.",
			wantTuned: true,
		},
		{
			name: "another manager changes the spec after the read: refused, nothing written",
			other: func(h *autoscalingv2.HorizontalPodAutoscaler) {
				h.Spec.MaxReplicas = 30
				h.ManagedFields = append(h.ManagedFields, metav1.ManagedFieldsEntry{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "autoscaling/v2", Time: &edited})
			},
			wantCode:  cmdutil.ExitFailure,
			wantCalls: []string{"dry run at resourceVersion 42 by kubectl-hpa"},
			wantLine:  "error: --apply: nothing written: HPA shop/web was changed since it was read (resourceVersion 42, now 43) by kubectl-edit at 2026-11-30T11:59:00Z: tune it again as it is now",
		},
		{
			name: "the HPA controller writes status after the read: the spec tuned is the spec there, patched at the new resourceVersion",
			other: func(h *autoscalingv2.HorizontalPodAutoscaler) {
				h.Status.CurrentReplicas = 7
				h.ManagedFields = append(h.ManagedFields, metav1.ManagedFieldsEntry{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &edited})
			},
			wantCalls: []string{"dry run at resourceVersion 42 by kubectl-hpa", "dry run at resourceVersion 43 by kubectl-hpa", "write at resourceVersion 43 by kubectl-hpa"},
			wantLine:  "Applied: shop/web patched as field manager kubectl-hpa after a server dry run; resourceVersion 43, now 44.",
			wantTuned: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := cmdtest.NewFixture()
			ec, fakes := f.Build()
			read := f.HPA
			var before func(int, *autoscalingv2.HorizontalPodAutoscaler)
			if tc.other != nil {
				before = otherWriter(t, tc.other)
			}
			srv := serveHPA(t, fakes.Kube, read, before)
			r := runTuneOn(t, ec, applyArgs...)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, tc.wantCode, r.stderr)
			}
			var got []string
			for _, c := range srv.calls {
				got = append(got, c.String())
			}
			if !slices.Equal(got, tc.wantCalls) {
				t.Errorf("patches %q, want %q", got, tc.wantCalls)
			}
			last := r.stdout
			if tc.wantCode != 0 {
				last = r.stderr
			}
			if lines := strings.Split(strings.TrimSpace(last), "\n"); lines[len(lines)-1] != tc.wantLine {
				t.Errorf("last line %q, want %q", lines[len(lines)-1], tc.wantLine)
			}
			stored := srv.stored
			want := read.DeepCopy()
			if tc.other != nil {
				tc.other(want)
			}
			if tuned := !apiequality.Semantic.DeepEqual(stored.Spec, want.Spec); tuned != tc.wantTuned {
				t.Errorf("spec tuned: %v, want %v; stored spec %+v", tuned, tc.wantTuned, stored.Spec)
			}
			if tc.other != nil && stored.Status.CurrentReplicas != want.Status.CurrentReplicas {
				t.Errorf("status.currentReplicas %d, want the other writer's %d", stored.Status.CurrentReplicas, want.Status.CurrentReplicas)
			}
		})
	}
}

func TestTuneApplyWritesNothingItCannotStandBehind(t *testing.T) {
	for _, tc := range []struct {
		name string
		// pods are the workload's at the start, each requesting request.
		pods    int
		request string
		args    []string
		want    string
	}{
		// From one pod, the first spike is above target whatever the spec with min and targets kept.
		{"no spec meets the constraints", 1, "500m", []string{"--max-above-target", "0", "--keep", "min,targets"},
			"--apply: nothing written: no spec played with min, targets kept meets the constraints (at most 0% of the period above target, no limit on rescales): the recommendation is the closest, not a safe spec\n"},
		{"the period is shorter than the default scale-down window", 4, "500m", []string{"--duration", "4m"},
			"--apply: nothing written: the load cannot support the recommendation: its period (4m0s) is shorter than the longest window or policy period of the specs compared ("},
		// The run on the real test cluster: 13.94% above target where 5% was asked, on 2m45s.
		{"no spec meets the constraints on a period shorter than the default scale-down window: both said", 2, "100m",
			[]string{"--load", td("short.csv"), "--candidates", "60", "--max-above-target", "5%", "--keep", "targets"},
			"--apply: nothing written: no spec played with targets kept meets the constraints (at most 5% of the period above target, no limit on rescales): the recommendation is the closest, not a safe spec; and the load cannot support the recommendation: its period (2m45s) is shorter than the longest window or policy period of the specs compared (5m0s)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := cmdtest.NewFixture()
			f.SetPods(tc.pods, tc.request, "400m")
			ec, fakes := f.Build()
			srv := serveHPA(t, fakes.Kube, f.HPA, nil)
			r := runTuneOn(t, ec, append(slices.Clone(applyArgs), tc.args...)...)
			if r.code != cmdutil.ExitUsage {
				t.Errorf("exit %d, want %d (usage)", r.code, cmdutil.ExitUsage)
			}
			if !strings.HasPrefix(r.stderr, "error: "+tc.want) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("stderr %q, want one line starting %q", r.stderr, tc.want)
			}
			if len(srv.calls) > 0 {
				t.Errorf("patches sent: %v", srv.calls)
			}
			if !apiequality.Semantic.DeepEqual(srv.stored, f.HPA) {
				t.Errorf("the HPA changed: %+v", srv.stored.Spec)
			}
			if !strings.Contains(r.stdout, "What the recommendation rests on:") {
				t.Errorf("the report is not printed before the refusal:\n%s", r.stdout)
			}
		})
	}
}

func TestTuneApplyWritesNothingWhenTheHPAIsTheRecommendation(t *testing.T) {
	kube := kubefake.NewClientset(cmdtest.NewFixture().HPA)
	r := &report{res: &search.Result{Met: true}, constraints: search.Constraints{MaxAboveFraction: -1, MaxRescalesPerHour: -1}}
	var out bytes.Buffer
	if err := apply(context.Background(), kube, cmdtest.NewFixture().HPA, r, &out); err != nil {
		t.Fatal(err)
	}
	if want := "Applied: nothing to write: the HPA as it is is the recommendation.\n"; out.String() != want {
		t.Errorf("printed %q, want %q", out.String(), want)
	}
	for _, a := range kube.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" {
			t.Errorf("sent a %s", a.GetVerb())
		}
	}
}

package controller

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation/live"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
)

// TestIndexedPodsMatchesAFullScan: whatever the selector, and whether the cache holds pods
// whole or stripped, the pods read are those a scan of every pod matches, whole again.
func TestIndexedPodsMatchesAFullScan(t *testing.T) {
	for _, stored := range []struct {
		name  string
		store func(*corev1.Pod) any
	}{
		{"whole", func(p *corev1.Pod) any { return p }},
		{"stripped", func(p *corev1.Pod) any { obj, _ := NewPodStripper().Transform(p); return obj }},
	} {
		idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{
			cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, labelPairIndex: podLabelPairs})
		pods := []*corev1.Pod{newPod("a-1", "a"), newPod("a-2", "a"), newPod("b-1", "b"), newPod("c-1", "c")}
		pods[1].Labels["tier"] = "web"
		elsewhere := newPod("a-9", "a")
		elsewhere.Namespace = "other"
		for _, p := range append(pods, elsewhere) {
			if err := idx.Add(stored.store(p.DeepCopy())); err != nil {
				t.Fatal(err)
			}
		}
		for _, sel := range []string{"app=a", "app==a", "app in (a)", "app in (a,b)", "app=a,tier=web", "tier", "!tier", "app!=a", "app=zzz", ""} {
			t.Run(stored.name+"/"+sel, func(t *testing.T) {
				s, err := labels.Parse(sel)
				if err != nil {
					t.Fatal(err)
				}
				got, err := IndexedPods{Indexer: idx}.Pods(context.Background(), ns, s)
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for _, p := range pods {
					if s.Matches(labels.Set(p.Labels)) {
						want = append(want, p.Name)
					}
				}
				if diff := cmp.Diff(want, names(got), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
					t.Errorf("pods (-full scan +indexed):\n%s", diff)
				}
				for _, p := range got {
					if p.Namespace != ns || p.Status.Phase != corev1.PodRunning || len(p.Spec.Containers) == 0 {
						t.Errorf("pod %s read back without its namespace, phase or containers: %+v", p.Name, p)
					}
				}
			})
		}
	}
}

// whole is the pod a stripped obj holds, as IndexedPods reads it.
func whole(obj any) *corev1.Pod { return wholePods([]any{obj}, labels.Everything())[0] }

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestSelectorTracker(t *testing.T) {
	mustParse := func(s string) labels.Selector {
		sel, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return sel
	}
	tr := NewSelectorTracker()
	for _, n := range []string{"a", "b", "c", "d"} {
		tr.Register(ns, n)
	}
	podsA := []*corev1.Pod{newPod("a-1", "a")}
	ctx := context.Background()
	// b registered but never reconciled: match-nothing, so a sees no overlap yet.
	if got, _ := tr.OtherHPAs(ctx, newHPA("a"), mustParse("app=a"), podsA); len(got) != 0 {
		t.Errorf("before others reconcile: %q, want none", got)
	}
	if got, _ := tr.OtherHPAs(ctx, newHPA("b"), mustParse("app in (a,b)"), podsA); !cmp.Equal(got, []string{"default/a"}) {
		t.Errorf("b over a's pods: %q, want [default/a]", got)
	}
	if got, _ := tr.OtherHPAs(ctx, newHPA("c"), mustParse("app"), podsA); !cmp.Equal(got, []string{"default/a", "default/b"}) {
		t.Errorf("c with an existence selector: %q, want [default/a default/b]", got)
	}
	// d moves away from a's pods: re-putting its selector unindexes the old one.
	if _, err := tr.OtherHPAs(ctx, newHPA("d"), mustParse("app=a"), podsA); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.OtherHPAs(ctx, newHPA("d"), mustParse("app=zzz"), []*corev1.Pod{newPod("z-1", "zzz")}); err != nil {
		t.Fatal(err)
	}
	tr.Forget(ns, "b")
	tr.Forget(ns, "c")
	if got, _ := tr.OtherHPAs(ctx, newHPA("a"), mustParse("app=a"), podsA); len(got) != 0 {
		t.Errorf("after b and c are gone and d moved: %q, want none", got)
	}
	if _, err := tr.OtherHPAs(ctx, newHPA("b"), mustParse("app=a"), podsA); err == nil {
		t.Error("a forgotten HPA recorded its selector, want the deleted-during-reconciliation error")
	}
}

func TestPodStripperKeepsWhatDecisionsRead(t *testing.T) {
	full := realisticPod(1)
	full.Spec.InitContainers = []corev1.Container{{Name: "sidecar", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		Resources: full.Spec.Containers[0].Resources, Image: "x"}}
	full.Spec.Resources = &corev1.ResourceRequirements{Requests: full.Spec.Containers[0].Resources.Requests}
	obj, err := NewPodStripper().Transform(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := whole(obj)
	want := &corev1.Pod{}
	want.Name, want.Namespace, want.ResourceVersion, want.Labels = full.Name, full.Namespace, full.ResourceVersion, full.Labels
	want.Spec.Containers = []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: full.Spec.Containers[0].Resources.Requests}}}
	want.Spec.InitContainers = []corev1.Container{{Name: "sidecar", RestartPolicy: full.Spec.InitContainers[0].RestartPolicy,
		Resources: corev1.ResourceRequirements{Requests: full.Spec.Containers[0].Resources.Requests}}}
	want.Spec.Resources = &corev1.ResourceRequirements{Requests: full.Spec.Containers[0].Resources.Requests}
	want.Status.Phase, want.Status.StartTime = full.Status.Phase, full.Status.StartTime
	want.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: full.Status.Conditions[2].LastTransitionTime}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stripped pod (-want +got):\n%s", diff)
	}
	if s, _ := NewPodStripper().Transform("tombstone"); s != "tombstone" {
		t.Errorf("non-pod object changed: %v", s)
	}
}

// A scale write is sent with the resource version of the scale its decision read, so it
// needs no read of its own; when the target changed since, the 409 is answered by reading
// the scale again and writing once more.
func TestScaleWriteCarriesTheVersionReadAndRetriesAConflict(t *testing.T) {
	f := newFakeScales(map[string]int32{"web": 2})
	f.versions = true
	c := &live.ScaleClient{Scales: f, Mapper: testMapper()}
	ctx := t.Context()
	ref := newHPA("web").Spec.ScaleTargetRef
	if _, err := c.Scale(ctx, ns, ref); err != nil {
		t.Fatalf("Scale: %v", err)
	}
	rv, err := c.SetReplicasVersion(ctx, ns, ref, 4, nil)
	if err != nil || rv != "2" {
		t.Fatalf("SetReplicasVersion = %q, %v; want \"2\", nil", rv, err)
	}
	f.mu.Lock()
	f.scales[ns+"/web"].ResourceVersion = "7" // another writer
	f.mu.Unlock()
	rv, err = c.SetReplicasVersion(ctx, ns, ref, 6, nil)
	if err != nil || rv != "8" {
		t.Fatalf("SetReplicasVersion after another write = %q, %v; want \"8\", nil", rv, err)
	}
	want := []string{
		"get deployments/scale web",
		"update deployments/scale web replicas=4 dryRun=[]",
		"update deployments/scale web replicas=6 dryRun=[]", "get deployments/scale web", "update deployments/scale web replicas=6 dryRun=[]",
	}
	if diff := cmp.Diff(want, f.recorded()); diff != "" {
		t.Errorf("scale actions (-want +got):\n%s", diff)
	}
	if got := f.scales[ns+"/web"].Spec.Replicas; got != 6 {
		t.Errorf("spec.replicas = %d, want 6", got)
	}
}

// TestPodStripperKeepsTheRequestTheCoreReads: a stripped pod has the request the core divides
// usage by, whatever makes it up (pod overhead counts with pod-level requests).
func TestPodStripperKeepsTheRequestTheCoreReads(t *testing.T) {
	cpu := func(v string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}
	}
	tests := []struct {
		name string
		mods []testbuild.PodOption
	}{
		{"container requests", nil},
		{"sidecar", []testbuild.PodOption{testbuild.InitContainers(testbuild.Sidecar("proxy", cpu("300m")))}},
		{"pod-level requests and overhead", []testbuild.PodOption{testbuild.PodRequests(cpu("700m")), testbuild.Overhead(cpu("100m"))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			full := realisticPod(1)
			for _, mod := range tt.mods {
				mod(full)
			}
			want, err := replicas.PodRequest(full, "", corev1.ResourceCPU, true)
			if err != nil {
				t.Fatal(err)
			}
			obj, err := NewPodStripper().Transform(full.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			if got, err := replicas.PodRequest(whole(obj), "", corev1.ResourceCPU, true); err != nil || got != want {
				t.Errorf("stripped pod's request = %dm (%v), want %dm", got, err, want)
			}
		})
	}
}

// TestPodStripperSharesEqualContainerLists: pods whose stripped containers are equal get one
// shared array (the core computes their request once); any difference the core reads (a name,
// a request, a restart policy) gives a pod its own.
func TestPodStripperSharesEqualContainerLists(t *testing.T) {
	s := NewPodStripper()
	strip := func(mod func(*corev1.Pod)) *corev1.Pod {
		full := realisticPod(1)
		mod(full)
		obj, err := s.Transform(full)
		if err != nil {
			t.Fatal(err)
		}
		return whole(obj)
	}
	base := strip(func(*corev1.Pod) {})
	same := strip(func(p *corev1.Pod) { p.Name, p.Spec.Containers[0].Image = "web-other", "other:2" })
	if &same.Spec.Containers[0] != &base.Spec.Containers[0] {
		t.Error("two pods with equal stripped containers got two arrays, want one shared")
	}
	for name, mod := range map[string]func(*corev1.Pod){
		"container name": func(p *corev1.Pod) { p.Spec.Containers[0].Name = "api" },
		"request": func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("200m")
		},
		"restart policy": func(p *corev1.Pod) {
			p.Spec.Containers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		},
	} {
		if got := strip(mod); &got.Spec.Containers[0] == &base.Spec.Containers[0] {
			t.Errorf("a pod with another %s shares the first pod's container array", name)
		}
	}
}

// TestDeletingAnHPAForgetsTheScaleVersionItsWritesCarried: the scale client keeps the resource
// version of each target it read so that a write costs no read; run lives for weeks while HPAs
// come and go, so an HPA's deletion drops its target's entry (through the cache too), and the
// next write to that target reads it first again.
func TestDeletingAnHPAForgetsTheScaleVersionItsWritesCarried(t *testing.T) {
	for _, tc := range []struct {
		name      string
		fromCache bool
		tombstone bool
	}{
		{name: "live scales"},
		{name: "scales served from the cache", fromCache: true},
		{name: "the deletion arrives as a tombstone", tombstone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeScales(map[string]int32{"web": 2})
			f.versions = true
			sc := &live.ScaleClient{Scales: f, Mapper: testMapper()}
			opts := DefaultOptions()
			opts.ScaleFromCache = tc.fromCache
			hpa := newHPA("web")
			c, err := New(opts, Deps{Kube: fake.NewClientset(), Scales: sc, Metrics: cpuMetrics(nil)})
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			ref := hpa.Spec.ScaleTargetRef
			if _, err := sc.Scale(ctx, ns, ref); err != nil {
				t.Fatal(err)
			}
			if _, ok := sc.ReadVersion(ns, ref); !ok {
				t.Fatal("the read was not remembered")
			}
			var deleted any = hpa
			if tc.tombstone {
				deleted = cache.DeletedFinalStateUnknown{Key: ns + "/web", Obj: hpa}
			}
			c.delete(deleted)
			if rv, ok := sc.ReadVersion(ns, ref); ok {
				t.Errorf("after the HPA's deletion the client still holds version %q of its target", rv)
			}
		})
	}
}

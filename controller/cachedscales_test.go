package controller

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild/fakemetrics"
)

var (
	deploymentKind = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	replicaSetKind = schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}
	statefulKind   = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	rcKind         = schema.GroupKind{Kind: "ReplicationController"}
)

func webSelector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
}

func newDeployment(name string, spec *int32, status int32, sel *metav1.LabelSelector) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, ResourceVersion: "1"},
		Spec: appsv1.DeploymentSpec{Replicas: spec, Selector: sel}, Status: appsv1.DeploymentStatus{Replicas: status}}
}

// startScaleCache starts f's scale informers the way Run does and waits until those of
// kinds have synced (a kind whose list fails is not waited for).
func (f *fixture) startScaleCache(t *testing.T, synced []schema.GroupKind, started ...schema.GroupKind) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(func() {
		cancel()
		f.c.cachedScales.Shutdown()
	})
	f.c.cachedScales.Start(ctx)
	for _, gk := range started {
		f.c.cachedScales.informer(f.c.cachedScales.kinds[gk])
	}
	for _, gk := range synced {
		inf := f.c.cachedScales.informer(f.c.cachedScales.kinds[gk])
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatalf("%v informer did not sync", gk)
		}
	}
}

func TestReconcileReadsBuiltInScalesFromInformers(t *testing.T) {
	calm := func() *fakemetrics.Client { return cpuMetrics(cpuAt(50, "web-1", "web-2")) } // on target: no rescale
	forbidList := func(resource string, tried chan<- struct{}) func(*fixture) {
		return func(f *fixture) {
			f.kube.PrependReactor("list", resource, func(core.Action) (bool, runtime.Object, error) {
				select {
				case tried <- struct{}{}:
				default:
				}
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: resource}, "", nil)
			})
		}
	}
	cases := []struct {
		name    string
		hpa     *autoscalingv2.HorizontalPodAutoscaler
		objects []runtime.Object
		// synced are the kinds whose informers the test waits for before reconciling.
		synced []schema.GroupKind
		// forbidden is the resource whose list the API refuses; the test waits for one refusal.
		forbidden string
		// busy metrics ask for 4 replicas: the write goes through the live scale subresource.
		busy         bool
		wantScale    replicas.Scale
		scaleActions []string
	}{
		{
			name:      "steady state on a cached Deployment sends no scale GET",
			hpa:       newHPA("web"),
			objects:   []runtime.Object{newDeployment("web", ptr.To[int32](2), 2, webSelector())},
			synced:    []schema.GroupKind{deploymentKind},
			wantScale: replicas.Scale{SpecReplicas: 2, StatusReplicas: 2, Selector: "app=web"},
		},
		{
			name:      "a Deployment without spec.replicas counts as 1, as the API defaults it",
			hpa:       newHPA("web"),
			objects:   []runtime.Object{newDeployment("web", nil, 1, webSelector())},
			synced:    []schema.GroupKind{deploymentKind},
			wantScale: replicas.Scale{SpecReplicas: 1, StatusReplicas: 1, Selector: "app=web"},
		},
		{
			name: "a cached ReplicaSet sends no scale GET",
			hpa:  newHPA("web", testbuild.Target("apps/v1", "ReplicaSet", "web")),
			objects: []runtime.Object{&appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
				Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2), Selector: webSelector()}, Status: appsv1.ReplicaSetStatus{Replicas: 2}}},
			synced:    []schema.GroupKind{replicaSetKind},
			wantScale: replicas.Scale{SpecReplicas: 2, StatusReplicas: 2, Selector: "app=web"},
		},
		{
			name: "a cached StatefulSet sends no scale GET",
			hpa:  newHPA("web", testbuild.Target("apps/v1", "StatefulSet", "web")),
			objects: []runtime.Object{&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
				Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), Selector: webSelector()}, Status: appsv1.StatefulSetStatus{Replicas: 2}}},
			synced:    []schema.GroupKind{statefulKind},
			wantScale: replicas.Scale{SpecReplicas: 2, StatusReplicas: 2, Selector: "app=web"},
		},
		{
			name: "a cached ReplicationController sends no scale GET",
			hpa:  newHPA("web", testbuild.Target("v1", "ReplicationController", "web")),
			objects: []runtime.Object{&corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
				Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](2), Selector: map[string]string{"app": "web"}}, Status: corev1.ReplicationControllerStatus{Replicas: 2}}},
			synced:    []schema.GroupKind{rcKind},
			wantScale: replicas.Scale{SpecReplicas: 2, StatusReplicas: 2, Selector: "app=web"},
		},
		{
			name:         "a rescale of a cached Deployment updates the live scale subresource with the cached version, reading nothing",
			hpa:          newHPA("web"),
			objects:      []runtime.Object{newDeployment("web", ptr.To[int32](2), 2, webSelector())},
			synced:       []schema.GroupKind{deploymentKind},
			busy:         true,
			wantScale:    replicas.Scale{SpecReplicas: 2, StatusReplicas: 2, Selector: "app=web"},
			scaleActions: []string{"update deployments/scale web replicas=4 dryRun=[]"},
		},
		{
			name:         "a kind without an informer is read with one scale GET",
			hpa:          newHPA("web", testbuild.Target("example.com/v1", "Widget", "web")),
			synced:       []schema.GroupKind{deploymentKind},
			wantScale:    replicas.Scale{SpecReplicas: 2, StatusReplicas: 2, Selector: "app=web"},
			scaleActions: []string{"get widgets/scale web"},
		},
		{
			name:         "a Deployment the cache does not hold is read with one scale GET",
			hpa:          newHPA("web"),
			synced:       []schema.GroupKind{deploymentKind},
			wantScale:    replicas.Scale{SpecReplicas: 2, StatusReplicas: 2, Selector: "app=web"},
			scaleActions: []string{"get deployments/scale web"},
		},
		{
			name:         "forbidden to list Deployments: read with one scale GET, no failure",
			hpa:          newHPA("web"),
			objects:      []runtime.Object{newDeployment("web", ptr.To[int32](2), 2, webSelector())},
			forbidden:    "deployments",
			wantScale:    replicas.Scale{SpecReplicas: 2, StatusReplicas: 2, Selector: "app=web"},
			scaleActions: []string{"get deployments/scale web"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := calm()
			if tc.busy {
				m = cpuMetrics(cpuAt(100, "web-1", "web-2"))
			}
			f := newFixture(t, DefaultOptions(), []*autoscalingv2.HorizontalPodAutoscaler{tc.hpa}, webPods(), map[string]int32{"web": 2}, m)
			for _, o := range tc.objects {
				if err := f.kube.Tracker().Add(o); err != nil {
					t.Fatal(err)
				}
			}
			var started []schema.GroupKind
			tried := make(chan struct{}, 1)
			if tc.forbidden != "" {
				forbidList(tc.forbidden, tried)(f)
				started = append(started, deploymentKind)
			}
			f.startScaleCache(t, tc.synced, started...)
			if tc.forbidden != "" {
				<-tried
			}
			f.kube.ClearActions()
			if err := f.sync(t, tc.hpa.Name); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			if diff := cmp.Diff(tc.scaleActions, f.scales.recorded()); diff != "" {
				t.Errorf("scale actions (-want +got):\n%s", diff)
			}
			// The one other request of the sync is the status write (the metrics are a fake);
			// the informers' own list and watch calls run in the background.
			var sent []string
			for _, a := range f.kubeActions() {
				if !strings.HasPrefix(a, "list ") && !strings.HasPrefix(a, "watch ") {
					sent = append(sent, a)
				}
			}
			if diff := cmp.Diff([]string{"update horizontalpodautoscalers/status dryRun=[]"}, sent); diff != "" {
				t.Errorf("API actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(&tc.wantScale, f.reports[0].Input.Scale); diff != "" {
				t.Errorf("scale read (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCachedScaleSelectorIsTheRegistrysString(t *testing.T) {
	// The wanted strings are what the apps registry's scale subresource reports for these
	// selectors (metav1.LabelSelectorAsSelector(...).String() in scaleFromDeployment).
	cases := []struct {
		name     string
		selector *metav1.LabelSelector
		want     string
	}{
		{"matchLabels are sorted by key", &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "fe", "app": "web"}}, "app=web,tier=fe"},
		{"matchExpressions of every operator", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod", "canary"}},
			{Key: "zone", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"b", "a"}},
			{Key: "legacy", Operator: metav1.LabelSelectorOpDoesNotExist},
			{Key: "app", Operator: metav1.LabelSelectorOpExists},
		}}, "app,env in (canary,prod),!legacy,zone notin (a,b)"},
		{"matchLabels and matchExpressions together", &metav1.LabelSelector{
			MatchLabels:      map[string]string{"app": "web"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "track", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"canary"}}},
		}, "app=web,track notin (canary)"},
		{"an empty selector selects everything", &metav1.LabelSelector{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, DefaultOptions(), nil, nil, nil, cpuMetrics(nil))
			if err := f.kube.Tracker().Add(newDeployment("web", ptr.To[int32](3), 2, tc.selector)); err != nil {
				t.Fatal(err)
			}
			f.startScaleCache(t, []schema.GroupKind{deploymentKind})
			got, err := f.c.scales.Scale(t.Context(), ns, newHPA("web").Spec.ScaleTargetRef)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&replicas.Scale{SpecReplicas: 3, StatusReplicas: 2, Selector: tc.want}, got); diff != "" {
				t.Errorf("scale (-want +got):\n%s", diff)
			}
			if got := f.scales.recorded(); len(got) != 0 {
				t.Errorf("scale actions %q, want none", got)
			}
		})
	}
}

func TestCachedScaleOlderThanOurWriteIsReadLiveUntilTheInformerCatchesUp(t *testing.T) {
	// The informer holds the Deployment at version 1 with 2 replicas; the scale subresource
	// answers our write with version 7. Until the informer has seen version 7, its 2 replicas
	// are the past: a decision from them would write the same rescale again.
	f := newFixture(t, DefaultOptions(), []*autoscalingv2.HorizontalPodAutoscaler{newHPA("web")}, webPods(), map[string]int32{"web": 2},
		cpuMetrics(cpuAt(100, "web-1", "web-2")))
	if err := f.kube.Tracker().Add(newDeployment("web", ptr.To[int32](2), 2, webSelector())); err != nil {
		t.Fatal(err)
	}
	f.scales.mu.Lock()
	f.scales.scales[ns+"/web"].ResourceVersion = "7"
	f.scales.mu.Unlock()
	f.startScaleCache(t, []schema.GroupKind{deploymentKind})
	informer := f.c.cachedScales.informer(f.c.cachedScales.kinds[deploymentKind])

	syncs := []struct {
		name string
		// cached is the Deployment the informer holds at this sync (nil: unchanged).
		cached       *appsv1.Deployment
		wantActions  []string
		wantSpec     int32
		wantRescaled bool
	}{
		{name: "the first sync reads the cache and writes the rescale", wantSpec: 2, wantRescaled: true,
			wantActions: []string{"update deployments/scale web replicas=4 dryRun=[]"}},
		{name: "the cache still holds version 1: the scale is read live and nothing is written again", wantSpec: 4,
			wantActions: []string{"get deployments/scale web"}},
		{name: "an unrelated newer event that is still older than the write: live again", wantSpec: 4,
			cached:      withVersion(newDeployment("web", ptr.To[int32](2), 3, webSelector()), "5"),
			wantActions: []string{"get deployments/scale web"}},
		{name: "the informer has seen the write: the cache is read again", wantSpec: 4,
			cached: withVersion(newDeployment("web", ptr.To[int32](4), 2, webSelector()), "7")},
	}
	for i, s := range syncs {
		if s.cached != nil {
			if err := f.kube.Tracker().Update(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, s.cached, ns); err != nil {
				t.Fatal(err)
			}
			waitCachedVersion(t, informer, s.cached.ResourceVersion)
		}
		before := len(f.scales.recorded())
		if err := f.sync(t, "web"); err != nil {
			t.Fatalf("sync %d (%s): %v", i, s.name, err)
		}
		if diff := cmp.Diff(s.wantActions, f.scales.recorded()[before:], cmpEmptyIsNil); diff != "" {
			t.Errorf("sync %d (%s): scale actions (-want +got):\n%s", i, s.name, diff)
		}
		rep := f.reports[len(f.reports)-1]
		if rep.Input.Scale == nil || rep.Input.Scale.SpecReplicas != s.wantSpec || rep.ScaleWritten != s.wantRescaled {
			t.Errorf("sync %d (%s): read %+v, scale written %t; want spec %d, written %t", i, s.name, rep.Input.Scale, rep.ScaleWritten, s.wantSpec, s.wantRescaled)
		}
	}
}

func TestCachedScalesKeepNoHoldAfterADryRunWrite(t *testing.T) {
	f := newFixture(t, DefaultOptions(), nil, nil, map[string]int32{"web": 2}, cpuMetrics(nil))
	if err := f.kube.Tracker().Add(newDeployment("web", ptr.To[int32](2), 2, webSelector())); err != nil {
		t.Fatal(err)
	}
	f.scales.mu.Lock()
	f.scales.scales[ns+"/web"].ResourceVersion = "7"
	f.scales.mu.Unlock()
	f.startScaleCache(t, []schema.GroupKind{deploymentKind})
	ref := newHPA("web").Spec.ScaleTargetRef
	if err := f.c.scales.SetReplicas(t.Context(), ns, ref, 4, []string{metav1.DryRunAll}); err != nil {
		t.Fatal(err)
	}
	before := len(f.scales.recorded())
	got, err := f.c.scales.Scale(t.Context(), ns, ref)
	if err != nil {
		t.Fatal(err)
	}
	if got.SpecReplicas != 2 || len(f.scales.recorded()) != before {
		t.Errorf("after a dryRun=All write: read %+v with scale actions %q, want the cached 2 replicas and no GET", got, f.scales.recorded()[before:])
	}
}

var cmpEmptyIsNil = cmp.Comparer(slices.Equal[[]string])

func withVersion(d *appsv1.Deployment, rv string) *appsv1.Deployment {
	d.ResourceVersion = rv
	return d
}

// waitCachedVersion waits until the informer holds Deployment web at resource version rv.
func waitCachedVersion(t *testing.T, inf cache.SharedIndexInformer, rv string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		if obj, ok, _ := inf.GetIndexer().GetByKey(ns + "/web"); ok && obj.(*appsv1.Deployment).ResourceVersion == rv {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the informer never held version %s", rv)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

package controller

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas/benchload"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild/fakemetrics"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// BenchmarkSyncPass1000HPAs measures one full sync pass (every HPA reconciled once) over
// 1,000 HPAs, each with its own Deployment and 3 pods, in steady state (nothing to write), by
// one worker and by run's default of 5 workers taking keys from one queue (on fake clients the
// pass is CPU-bound, so 5 workers gain at most the machine's cores).
func BenchmarkSyncPass1000HPAs(b *testing.B) {
	for _, workers := range []int{1, 5} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) { benchSyncPass(b, workers) })
	}
}

func benchSyncPass(b *testing.B, workers int) {
	const n = 1000
	hpas := make([]*autoscalingv2.HorizontalPodAutoscaler, n)
	var pods []*corev1.Pod
	scales := map[string]int32{}
	m := &fakemetrics.Client{Name: "fixture", At: t0.Add(-10 * time.Second), BySelector: map[string]fakemetrics.Values{}}
	for i := range n {
		app := fmt.Sprintf("app-%04d", i)
		hpas[i] = newHPA(app, testbuild.TargetName(app))
		scales[app] = 3
		var names []string
		for j := range 3 {
			p := newPod(fmt.Sprintf("%s-%d", app, j), app)
			pods = append(pods, p)
			names = append(names, p.Name)
		}
		m.BySelector["app="+app] = cpuAt(50, names...)
	}
	f := newFixture(b, DefaultOptions(), hpas, pods, scales, m)
	ctx := context.Background()
	pass := func() {
		keys := make(chan string, n)
		for _, h := range hpas {
			keys <- ns + "/" + h.Name
		}
		close(keys)
		errs := make(chan error, workers)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for key := range keys {
					if _, _, err := f.c.reconcileKey(ctx, key); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
	}
	// First pass writes the initial statuses; later passes are the steady state.
	pass()
	idx := f.c.hpaFactory.Autoscaling().V2().HorizontalPodAutoscalers().Informer().GetIndexer()
	for _, h := range hpas {
		if err := idx.Update(f.storedHPA(b, h.Name)); err != nil {
			b.Fatal(err)
		}
	}
	f.kube.ClearActions()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		pass()
	}
	b.StopTimer()
	b.ReportMetric(float64(len(f.kube.Actions()))/float64(b.N)/n, "apiWrites/HPA")
}

// BenchmarkMetricChangeToScaleWrite measures the reconcile that turns a metric change into
// a scale write: the load alternates between 4x and 1x target so every reconcile rescales.
func BenchmarkMetricChangeToScaleWrite(b *testing.B) {
	m := cpuMetrics(nil)
	opts := DefaultOptions()
	opts.Config.DownscaleStabilizationWindow = 0
	f := newFixture(b, opts, []*autoscalingv2.HorizontalPodAutoscaler{newHPA("web")}, webPods(), map[string]int32{"web": 2}, m)
	ctx := context.Background()
	high := true
	b.ReportAllocs()
	for b.Loop() {
		if high {
			m.Set(corev1.ResourceCPU, cpuAt(200, "web-1", "web-2"))
		} else {
			m.Set(corev1.ResourceCPU, cpuAt(1, "web-1", "web-2"))
		}
		high = !high
		f.clock.Step(15 * time.Second)
		_ = f.scales.recorded()
		if _, _, err := f.c.reconcileKey(ctx, ns+"/web"); err != nil {
			b.Fatal(err)
		}
	}
}

// realisticPod is a Deployment pod as the API server returns it: managed fields,
// annotations, owner reference, env, probes, a projected token volume, statuses.
func realisticPod(i int) *corev1.Pod {
	name := fmt.Sprintf("web-7d4b9c8f6d-%05d", i)
	fields := `{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"1\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:env":{},"f:image":{},"f:imagePullPolicy":{},"f:livenessProbe":{},"f:name":{},"f:ports":{},"f:readinessProbe":{},"f:resources":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}`
	now := metav1.NewTime(t0)
	env := make([]corev1.EnvVar, 6)
	for j := range env {
		env[j] = corev1.EnvVar{Name: fmt.Sprintf("SETTING_%d", j), Value: strings.Repeat("v", 24)}
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 10}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns, GenerateName: "web-7d4b9c8f6d-", UID: types.UID(fmt.Sprintf("0b6c1f9e-1111-4c1a-9a55-%012d", i)),
			ResourceVersion: fmt.Sprint(100000 + i), CreationTimestamp: now,
			Labels:      map[string]string{"app": "web", "pod-template-hash": "7d4b9c8f6d"},
			Annotations: map[string]string{"kubectl.kubernetes.io/restartedAt": t0.Format(time.RFC3339), "prometheus.io/scrape": "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d4b9c8f6d",
				UID: "1", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)},
				{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &now, FieldsType: "FieldsV1", Subresource: "status", FieldsV1: metav1.NewFieldsV1(fields)},
			},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.example.com/team/web:1.24.3", Env: env,
				Ports: []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
				VolumeMounts:           []corev1.VolumeMount{{Name: "kube-api-access-x7k2p", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
				LivenessProbe:          probe,
				ReadinessProbe:         probe,
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy: corev1.PullIfNotPresent,
			}},
			Volumes: []corev1.Volume{{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				}}}}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, ServiceAccountName: "default",
			NodeName: fmt.Sprintf("node-%03d", i%100), SchedulerName: "default-scheduler",
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: "10.0.0.1", PodIP: fmt.Sprintf("10.1.%d.%d", i/250, i%250), StartTime: &now, QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{
				{Type: "PodReadyToStartContainers", Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, Image: "registry.example.com/team/web:1.24.3",
				ImageID: "registry.example.com/team/web@sha256:" + strings.Repeat("ab", 32), ContainerID: "containerd://" + strings.Repeat("cd", 32),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}, Started: ptr.To(true)}},
		},
	}
}

// BenchmarkPodCacheMemory reports the heap held by an informer store of 10,000 pods, with
// pods stored whole and stripped by StripPod.
func BenchmarkPodCacheMemory(b *testing.B) {
	const n = 10000
	for _, tc := range []struct {
		name      string
		transform cache.TransformFunc
	}{{"full", nil}, {"stripped", NewPodStripper().Transform}} {
		b.Run(tc.name, func(b *testing.B) {
			var held float64
			for b.Loop() {
				held = storeBytes(b, n, tc.transform)
			}
			b.ReportMetric(held, "heapB/10kpods")
			b.ReportMetric(held/n, "heapB/pod")
		})
	}
}

// storeBytes fills a store the way an informer does (decoded object -> transform -> store)
// and returns how much live heap the store keeps.
func storeBytes(b *testing.B, n int, transform cache.TransformFunc) float64 {
	b.Helper()
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	before := liveHeap()
	for i := range n {
		var obj any = realisticPod(i)
		if transform != nil {
			var err error
			if obj, err = transform(obj); err != nil {
				b.Fatal(err)
			}
		}
		if err := store.Add(obj); err != nil {
			b.Fatal(err)
		}
	}
	after := liveHeap()
	runtime.KeepAlive(store)
	return float64(after - before)
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkListAndDecide is what run does per sync for one HPA over N pods that upstream's
// calculator benchmark (test/parity, BenchmarkUpstreamResourceReplicas) times as well: list
// the pods from the informer's indexer as run does (stripped pods, made whole by IndexedPods
// over the label-pair index; upstream's lister scans the namespace index), fill the
// PodSamples as a metrics decoder does, and decide as run does, without the per-pod account.
// BenchmarkDecide in the core times the last two only; make bench-compare runs the three side
// by side.
func BenchmarkListAndDecide(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			now := time.Now()
			w := benchload.New(n, now)
			idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, labelPairIndex: podLabelPairs})
			// Stored as run's cache holds them: stripped.
			stripper := NewPodStripper()
			for i := range w.Pods {
				obj, err := stripper.Transform(&w.Pods[i])
				if err != nil {
					b.Fatal(err)
				}
				if err := idx.Add(obj); err != nil {
					b.Fatal(err)
				}
			}
			selector, err := labels.Parse(benchload.Selector)
			if err != nil {
				b.Fatal(err)
			}
			pods := IndexedPods{Indexer: idx}
			h := testbuild.HPA(benchload.Namespace, "web", testbuild.Target("apps/v1", "Deployment", "web"), testbuild.Min(1),
				testbuild.Max(int32(4*n)), testbuild.Metrics(testbuild.CPUUtilization(benchload.TargetUtilization)))
			scale := &replicas.Scale{SpecReplicas: int32(n), StatusReplicas: int32(n), Selector: benchload.Selector}
			cfg := replicas.DefaultConfig()
			ctx := context.Background()
			b.ReportAllocs()
			cpu, _ := benchload.ProcessCPU()
			for b.Loop() {
				listed, err := pods.Pods(ctx, benchload.Namespace, selector)
				if err != nil {
					b.Fatal(err)
				}
				m := sampleset.New(len(w.Samples))
				for _, s := range w.Samples {
					m.Add(s.Pod, sampleset.Sample{MilliValue: s.MilliValue, Timestamp: sampleset.Timestamp(s.Timestamp), Window: s.Window})
				}
				d := replicas.Decide(replicas.Input{
					HPA: h, Scale: scale, Pods: listed,
					Metrics: []replicas.MetricData{{PodSamples: m, Timestamp: now}},
					History: replicas.History{Recommendations: []replicas.Recommendation{}},
					Now:     now, Config: cfg, OmitPodTreatments: true,
				})
				if d.Phase != replicas.PhaseComputed || len(listed) != n {
					b.Fatalf("phase %s (%v), %d pods listed", d.Phase, d.Err, len(listed))
				}
			}
			benchload.CPUPerOp(b, cpu)
		})
	}
}

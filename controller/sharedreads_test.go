package controller

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	core "k8s.io/client-go/testing"
	cmv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"
	customfake "k8s.io/metrics/pkg/client/custom_metrics/fake"
	externalfake "k8s.io/metrics/pkg/client/external_metrics/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubectl-hpa/kubectl-hpa/controller/evaluation"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/metrics"
	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
)

// usage is one pod's PodMetrics in the fake metrics API: its labels, one container "app" with
// cpu in millicores, sampled age before t0.
type usage struct {
	namespace, name string
	labels          map[string]string
	milli           int64
	age             time.Duration
}

func (u usage) podMetrics() metricsv1beta1.PodMetrics {
	return metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Name: u.name, Namespace: u.namespace, Labels: u.labels},
		Timestamp: metav1.NewTime(t0.Add(-u.age)), Window: metav1.Duration{Duration: 15 * time.Second},
		Containers: []metricsv1beta1.ContainerMetrics{{Name: "app", Usage: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(u.milli, resource.DecimalSI)}}}}
}

// metricsAPI is a fake metrics.k8s.io and custom.metrics.k8s.io: PodMetrics lists filtered by
// namespace and label selector as the server filters them, and the Pods metric "qps" (each
// pod's cpu millicores divided by 10) of the pods matching the selector, as an adapter answers;
// each request recorded.
type metricsAPI struct {
	mu    sync.Mutex
	pods  []usage
	err   error
	lists []string // "namespace?labelSelector", "qps namespace?labelSelector" for custom metrics
	// block, when set, holds every list until it is closed; entered is told of each list first.
	block   chan struct{}
	entered chan struct{}
}

func (a *metricsAPI) set(pods []usage, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pods, a.err = pods, err
}

func (a *metricsAPI) requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.lists...)
}

func (a *metricsAPI) list(act core.Action) (bool, runtime.Object, error) {
	sel := act.(core.ListAction).GetListRestrictions().Labels
	a.mu.Lock()
	a.lists = append(a.lists, act.GetNamespace()+"?"+sel.String())
	block, entered := a.block, a.entered
	a.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
	}
	if block != nil {
		<-block
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return true, nil, a.err
	}
	out := &metricsv1beta1.PodMetricsList{}
	for _, u := range a.pods {
		if u.namespace == act.GetNamespace() && sel.Matches(labels.Set(u.labels)) {
			out.Items = append(out.Items, u.podMetrics())
		}
	}
	return true, out, nil
}

func (a *metricsAPI) custom(act core.Action) (bool, runtime.Object, error) {
	get := act.(customfake.GetForAction)
	sel := get.GetLabelSelector()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lists = append(a.lists, get.GetMetricName()+" "+act.GetNamespace()+"?"+sel.String())
	if a.err != nil {
		return true, nil, a.err
	}
	out := &cmv1beta2.MetricValueList{}
	for _, u := range a.pods {
		if u.namespace == act.GetNamespace() && sel.Matches(labels.Set(u.labels)) && get.GetMetricName() == "qps" {
			out.Items = append(out.Items, cmv1beta2.MetricValue{DescribedObject: corev1.ObjectReference{Kind: "Pod", Name: u.name, Namespace: u.namespace},
				Metric: cmv1beta2.MetricIdentifier{Name: "qps"}, Timestamp: metav1.NewTime(t0.Add(-u.age)), Value: *resource.NewMilliQuantity(u.milli*100, resource.DecimalSI)})
		}
	}
	return true, out, nil
}

// client is the real metrics client over a, judging sample ages by clk.
func (a *metricsAPI) client(t testing.TB, clk *testingclock.FakeClock) metrics.Client {
	t.Helper()
	res := metricsfake.NewSimpleClientset()
	res.PrependReactor("list", "pods", a.list)
	custom := &customfake.FakeCustomMetricsClient{}
	custom.AddReactor("get", "pods", a.custom)
	disc := &fakediscovery.FakeDiscovery{Fake: &core.Fake{}}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: "metrics.k8s.io/v1beta1"}, {GroupVersion: "custom.metrics.k8s.io/v1beta2"}}
	m, err := metrics.NewAPIClient(metrics.APIClients{
		Discovery: disc, Resource: res,
		Custom:   func(customclient.AvailableAPIsGetter) customclient.CustomMetricsClient { return custom },
		External: &externalfake.FakeExternalMetricsClient{},
		Clock:    clk, MaxAge: 5 * time.Minute,
	}, map[string][]string{"metrics.k8s.io": {"v1beta1"}, "custom.metrics.k8s.io": {"v1beta2"}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func kv(pairs ...string) map[string]string {
	out := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[pairs[i]] = pairs[i+1]
	}
	return out
}

// twoNamespaces are the pods of shop and bank: overlapping labels, a pod of another HPA, a
// stale sample, and the same labels in both namespaces.
func twoNamespaces() []usage {
	return []usage{
		{"shop", "web-0", kv("app", "web", "tier", "front"), 450, 20 * time.Second},
		{"shop", "web-1", kv("app", "web"), 200, 25 * time.Second},
		{"shop", "api-0", kv("app", "api", "tier", "edge"), 100, 20 * time.Second},
		{"shop", "old-0", kv("app", "old"), 300, time.Hour},
		{"shop", "other-0", kv("app", "other"), 900, 20 * time.Second},
		{"bank", "web-0", kv("app", "web"), 700, 10 * time.Second},
		{"bank", "ledger-0", kv("app", "ledger"), 50, 10 * time.Second},
	}
}

// read is what one PodResource answered, comparably.
type read struct {
	Samples map[string]string
	At      time.Time
	Err     string
}

func podResource(t testing.TB, m evaluation.MetricsReader, namespace, selector, container string) read {
	t.Helper()
	sel, err := labels.Parse(selector)
	if err != nil {
		t.Fatal(err)
	}
	set, at, err := m.PodResource(context.Background(), namespace, corev1.ResourceCPU, sel, container)
	r := read{At: at}
	if err != nil {
		r.Err = err.Error()
	}
	if set != nil {
		r.Samples = map[string]string{}
		for name, s := range set.All() {
			r.Samples[name] = fmt.Sprintf("%dm at %s over %s", s.MilliValue, sampleset.Time(s.Timestamp).Format(time.RFC3339), s.Window)
		}
	}
	return r
}

// podsMetric is what one PodsMetric of "qps" answered, comparably.
func podsMetric(t testing.TB, m evaluation.MetricsReader, namespace, selector string) read {
	t.Helper()
	sel, err := labels.Parse(selector)
	if err != nil {
		t.Fatal(err)
	}
	set, at, err := m.PodsMetric(context.Background(), namespace, "qps", sel, labels.Everything())
	r := read{At: at}
	if err != nil {
		r.Err = err.Error()
	}
	if set != nil {
		r.Samples = map[string]string{}
		for name, s := range set.All() {
			r.Samples[name] = fmt.Sprintf("%d at %s over %s", s.MilliValue, sampleset.Time(s.Timestamp).Format(time.RFC3339), s.Window)
		}
	}
	return r
}

func TestSharedReadsServeEachSelectorWhatItsOwnListServes(t *testing.T) {
	reads := []struct{ namespace, selector, container string }{
		{"shop", "app=web", ""},
		{"shop", "app=api", ""},
		{"shop", "tier in (front,edge)", ""},
		{"shop", "app=web,tier!=front", ""},
		{"shop", "app=web", "app"},
		{"shop", "app=web", "sidecar"},
		// A second HPA of the same pods shares the first one's Pods metric read.
		{"shop", "app=web", ""},
		// A pod without metrics: the HPA's own list is empty.
		{"shop", "app=db", ""},
		// A stale sample fails only the selectors that pick its pod.
		{"shop", "app=old", ""},
		{"shop", "app in (old,web)", ""},
		{"shop", "", ""},
		{"bank", "app=web", ""},
		{"bank", "app=ledger", ""},
		{"bank", "app=api", ""},
		{"empty", "app=web", ""},
	}
	clk := testingclock.NewFakeClock(t0)
	perHPA, shared := &metricsAPI{pods: twoNamespaces()}, &metricsAPI{pods: twoNamespaces()}
	direct := perHPA.client(t, clk)
	s := newSharedMetrics(shared.client(t, clk), clk, time.Second)
	for _, r := range reads {
		t.Run(r.namespace+"/"+r.selector+"/"+r.container, func(t *testing.T) {
			want := podResource(t, direct, r.namespace, r.selector, r.container)
			got := podResource(t, s, r.namespace, r.selector, r.container)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the shared read (+) serves other samples than the HPA's own list (-):\n%s", diff)
			}
			if r.container != "" {
				return
			}
			want = podsMetric(t, direct, r.namespace, r.selector)
			got = podsMetric(t, s, r.namespace, r.selector)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("the shared Pods metric (+) serves other values than the HPA's own read (-):\n%s", diff)
			}
		})
	}
	want := []string{"shop?", "qps shop?app=web", "qps shop?app=api", "qps shop?tier in (edge,front)", "qps shop?app=web,tier!=front",
		"qps shop?app=db", "qps shop?app=old", "qps shop?app in (old,web)", "qps shop?",
		"bank?", "qps bank?app=web", "qps bank?app=ledger", "qps bank?app=api",
		"empty?", "qps empty?app=web"}
	if got := shared.requests(); !cmp.Equal(got, want) {
		t.Errorf("shared reads sent %q, want one list of each namespace and one read of its Pods metric per selector, sent with it %q", got, want)
	}
	if got, want := len(perHPA.requests()), 2*len(reads)-2; got != want {
		t.Errorf("per-HPA reads sent %d requests, want %d", got, want)
	}
}

func TestSharedReadIsNeverServedPastItsValidity(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	api := &metricsAPI{pods: twoNamespaces()}
	s := newSharedMetrics(api.client(t, clk), clk, time.Second)
	first := podResource(t, s, "shop", "app=web", "")

	// metrics-server scrapes: new values, which no sync may see while the read is valid.
	next := twoNamespaces()
	for i := range next {
		next[i].milli++
	}
	api.set(next, nil)
	clk.Step(999 * time.Millisecond)
	if got := podResource(t, s, "shop", "app=web", ""); !cmp.Equal(got, first) {
		t.Errorf("within its validity the shared read changed:\n%s", cmp.Diff(first, got))
	}
	if got := len(api.requests()); got != 1 {
		t.Fatalf("%d lists within the validity, want 1", got)
	}

	clk.Step(time.Millisecond)
	got := podResource(t, s, "shop", "app=web", "")
	if got.Samples["web-0"] != "451m at 2026-11-30T11:59:40Z over 15s" {
		t.Errorf("after its validity the read served %v, want the new list's 451m for web-0", got.Samples)
	}
	if got := api.requests(); len(got) != 2 {
		t.Errorf("lists %q, want a second one once the first expired", got)
	}
}

func TestASharedReadIsDroppedWhenItExpiresNotAtTheNextRead(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	api := &metricsAPI{pods: twoNamespaces()}
	s := newSharedMetrics(api.client(t, clk), clk, time.Second).(*sharedMetrics)
	podResource(t, s, "shop", "app=web", "")
	podResource(t, s, "bank", "app=web", "")
	held := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.reads)
	}
	if got := held(); got != 2 {
		t.Fatalf("%d reads held within their validity, want both namespaces'", got)
	}
	// The last namespaces read in a pass are not read again for a period: their lists must
	// not stay in memory until then.
	clk.Step(time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for held() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := held(); got != 0 {
		t.Errorf("%d reads still held once expired, with no read since, want none", got)
	}
}

func TestSharedReadKeepsNoFailure(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	api := &metricsAPI{pods: twoNamespaces(), err: apierrors.NewServiceUnavailable("metrics-server is restarting")}
	s := newSharedMetrics(api.client(t, clk), clk, time.Second)
	if r := podResource(t, s, "shop", "app=web", ""); r.Err == "" {
		t.Fatalf("got %v, want the list's error", r)
	}
	api.set(twoNamespaces(), nil)
	if r := podResource(t, s, "shop", "app=web", ""); r.Err != "" || len(r.Samples) != 2 {
		t.Errorf("the sync after a failed list got %+v, want the samples of a new list", r)
	}
	if got := len(api.requests()); got != 2 {
		t.Errorf("%d lists, want 2: a failed list serves only the syncs that waited for it", got)
	}
}

func TestWorkersSyncingOneNamespaceAtOnceShareOneList(t *testing.T) {
	clk := testingclock.NewFakeClock(t0)
	api := &metricsAPI{pods: twoNamespaces(), block: make(chan struct{}), entered: make(chan struct{}, 8)}
	s := newSharedMetrics(api.client(t, clk), clk, time.Second)
	want := podResource(t, (&metricsAPI{pods: twoNamespaces()}).client(t, clk), "shop", "app=web", "")

	const workers = 5
	got := make([]read, workers)
	var wg sync.WaitGroup
	wg.Go(func() { got[0] = podResource(t, s, "shop", "app=web", "") })
	<-api.entered
	for i := 1; i < workers; i++ {
		wg.Go(func() { got[i] = podResource(t, s, "shop", "app=web", "") })
	}
	// The others wait for the list in flight; give them time to ask before it answers.
	time.Sleep(50 * time.Millisecond)
	close(api.block)
	wg.Wait()
	for i, g := range got {
		if diff := cmp.Diff(want, g); diff != "" {
			t.Errorf("worker %d was served (+) other than its own list (-):\n%s", i, diff)
		}
	}
	if got := api.requests(); len(got) != 1 {
		t.Errorf("%d workers sent lists %q, want one", workers, got)
	}
}

func TestAClientThatCannotListANamespaceIsReadPerHPA(t *testing.T) {
	m := cpuMetrics(cpuAt(100, "web-1"))
	if got := newSharedMetrics(m, testingclock.NewFakeClock(t0), time.Second); got != evaluation.MetricsReader(m) {
		t.Errorf("got %T, want the client itself", got)
	}
}

func TestSharedReadValidity(t *testing.T) {
	for _, tc := range []struct{ period, want time.Duration }{
		{15 * time.Second, time.Second},
		{time.Second, 500 * time.Millisecond},
	} {
		if got := sharedReadValidity(tc.period); got != tc.want {
			t.Errorf("sync period %s: validity %s, want %s", tc.period, got, tc.want)
		}
	}
}

// TestPerNamespaceAndPerHPAReadsDecideAlike syncs the same HPAs, pods and metrics through run's
// loop with each --metrics-reads and requires the same reports: same inputs, same decisions.
func TestPerNamespaceAndPerHPAReadsDecideAlike(t *testing.T) {
	hpas := []*autoscalingv2.HorizontalPodAutoscaler{
		newHPA("web"),
		newHPA("api", testbuild.Target("apps/v1", "Deployment", "api")),
		newHPA("db", testbuild.Target("apps/v1", "Deployment", "db")),
		newHPA("old", testbuild.Target("apps/v1", "Deployment", "old")),
		newHPA("web-average", testbuild.Target("apps/v1", "Deployment", "batch"), testbuild.Metrics(testbuild.ResourceAverage(corev1.ResourceCPU, 80))),
		newHPA("api-qps", testbuild.Target("apps/v1", "Deployment", "api2"), func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{testbuild.PodsAverage("qps", 1000)}
		}),
		newHPA("web-qps", testbuild.Target("apps/v1", "Deployment", "web2"), func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{testbuild.PodsAverage("qps", 1000), testbuild.CPUUtilization(50)}
		}),
	}
	pods := []*corev1.Pod{newPod("web-1", "web"), newPod("web-2", "web"), newPod("api-1", "api"), newPod("db-1", "db"), newPod("old-1", "old"),
		newPod("batch-1", "batch"), newPod("unready-1", "batch", testbuild.ReadySince(corev1.ConditionFalse, t0.Add(-time.Minute))),
		newPod("api2-1", "api2"), newPod("api2-2", "api2"), newPod("web2-1", "web2")}
	usage := []usage{
		{ns, "web-1", kv("app", "web"), 120, 10 * time.Second},
		{ns, "web-2", kv("app", "web"), 90, 10 * time.Second},
		{ns, "api-1", kv("app", "api"), 20, 10 * time.Second},
		{ns, "old-1", kv("app", "old"), 50, time.Hour},
		{ns, "batch-1", kv("app", "batch"), 300, 10 * time.Second},
		{ns, "unready-1", kv("app", "batch"), 10, 10 * time.Second},
		{ns, "api2-1", kv("app", "api2"), 30, 10 * time.Second},
		{ns, "api2-2", kv("app", "api2"), 5, 10 * time.Second},
		{ns, "web2-1", kv("app", "web2"), 70, 10 * time.Second},
		{ns, "gone-1", kv("app", "web"), 999, 10 * time.Second},
		// A pod gone from the pod cache whose value the adapter still serves (Prometheus keeps
		// a deleted pod's series for minutes): upstream averages it into the Pods metric.
		{ns, "api2-gone", kv("app", "api2"), 900, 10 * time.Second},
		{"elsewhere", "web-9", kv("app", "web"), 999, 10 * time.Second},
	}
	scales := map[string]int32{"web": 2, "api": 1, "db": 1, "old": 1, "batch": 2, "api2": 2, "web2": 1}
	decide := func(reads MetricsReads) ([]Report, []string) {
		api := &metricsAPI{pods: usage}
		opts := DefaultOptions()
		opts.DryRun, opts.MetricsReads = DryRunClient, reads
		clk := testingclock.NewFakeClock(t0)
		f := newFixtureWith(t, opts, hpas, pods, scales, api.client(t, clk), clk)
		for _, h := range hpas {
			// db's pod has no metrics and old's sample is stale: their errors are in the reports.
			_ = f.sync(t, h.Name)
		}
		return f.reports, api.requests()
	}
	perHPA, perHPALists := decide(MetricsReadsPerHPA)
	perNS, perNSLists := decide(MetricsReadsPerNamespace)
	if len(perHPA) != len(hpas) {
		t.Fatalf("%d reports, want %d", len(perHPA), len(hpas))
	}
	if diff := cmp.Diff(perHPA, perNS, cmp.Comparer(sameError), cmp.Comparer(func(a, b *sampleset.Set) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("--metrics-reads=per-namespace (+) decided otherwise than per-hpa (-):\n%s", diff)
	}
	if want := []string{ns + "?", "qps " + ns + "?app=api2", "qps " + ns + "?app=web2"}; !cmp.Equal(perNSLists, want, cmpopts.SortSlices(func(a, b string) bool { return a < b })) {
		t.Errorf("per-namespace reads %q, want %q", perNSLists, want)
	}
	specs := 0
	for _, h := range hpas {
		specs += len(h.Spec.Metrics)
	}
	if len(perHPALists) != specs {
		t.Errorf("per-hpa lists %q, want one per HPA and metric (%d)", perHPALists, specs)
	}
}

package parity

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	scalefake "k8s.io/client-go/scale/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	autoscalingdefaults "k8s.io/kubernetes/pkg/apis/autoscaling/v2"
	"k8s.io/kubernetes/pkg/controller/podautoscaler"
	metricsclient "k8s.io/kubernetes/pkg/controller/podautoscaler/metrics"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

var reconcileFlag = flag.Int("reconcile-hpas", 300, "number of random HPAs in the reconcile-level test")

// hpaCase is one HPA for a whole reconcile: up to three metrics over the same pods, bounds,
// behavior and the scale-to-zero condition. The first metric's scenario carries the pods and the
// scale.
type hpaCase struct {
	seed         uint64
	metrics      []*scenario
	minReplicas  *int32
	maxReplicas  int32
	behavior     *autoscalingv2.HorizontalPodAutoscalerBehavior // as the user wrote it
	scaledToZero bool
}

func (c *hpaCase) base() *scenario { return c.metrics[0] }

func newHPACase(seed uint64, ns string) *hpaCase {
	g := gen{r: rand.New(rand.NewPCG(seed, seed^0x51afd7ed558ccd)), reconcile: true}
	c := &hpaCase{seed: seed}
	base := g.scenario(g.r.Uint64())
	base.ns = ns
	c.metrics = []*scenario{base}
	identities := map[string]bool{base.identity(): true}
	for j := 1; j < int(g.between(1, 3)); j++ {
		m := g.scenario(g.r.Uint64())
		if m.metricName != "" {
			m.metricName = fmt.Sprintf("%s-%d", m.metricName, j)
		}
		if m.kind.container() && len(base.pods) > 0 {
			// the metric names a container of these pods (all pods share one layout)
			var names []string
			for _, c := range base.pods[0].containers {
				names = append(names, c.name)
			}
			for _, c := range base.pods[0].inits {
				if c.sidecar {
					names = append(names, c.name)
				}
			}
			m.container = pick(g, names...)
		}
		if identities[m.identity()] {
			continue // one metric per resource and container: they would share the same samples
		}
		identities[m.identity()] = true
		m.ns, m.pods = ns, base.pods
		m.upTolerance, m.downTolerance = base.upTolerance, base.downTolerance
		m.specReplicas, m.statusReplicas = base.specReplicas, base.statusReplicas
		if m.kind.podBased() {
			m.samples = g.samples(m)
		} else {
			g.objectOrExternal(m)
		}
		c.metrics = append(c.metrics, m)
	}

	objectOrExternal := slices.ContainsFunc(c.metrics, func(s *scenario) bool { return !s.kind.podBased() })
	switch {
	case g.chance(0.3):
	case objectOrExternal && g.chance(0.3):
		c.minReplicas = ptr(int32(0))
	default:
		c.minReplicas = ptr(int32(g.between(1, 3)))
	}
	lo := int64(1)
	if c.minReplicas != nil {
		lo = max(lo, int64(*c.minReplicas))
	}
	c.maxReplicas = int32(g.between(lo, 25))
	if g.chance(0.15) {
		c.maxReplicas = int32(max(lo, int64(base.specReplicas)-g.between(1, 3))) // current above max
	}
	if g.chance(0.05) {
		base.specReplicas = 0
	}
	c.scaledToZero = base.specReplicas == 0 && g.chance(0.7)
	for _, m := range c.metrics {
		m.specReplicas = base.specReplicas
	}

	if g.chance(0.45) {
		for _, m := range c.metrics { // without behavior only the controller's tolerance applies
			m.upTolerance, m.downTolerance = "", ""
		}
		return c
	}
	c.behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: g.rules(base.upTolerance), ScaleDown: g.rules(base.downTolerance)}
	return c
}

// identity is what the metrics client is asked for.
func (s *scenario) identity() string {
	switch {
	case s.kind.resourceBased():
		return fmt.Sprintf("resource/%s/%s", s.resource, s.container)
	case s.kind == kindPodsAverageValue:
		return "pods/" + s.metricName
	case s.kind == kindObjectValue || s.kind == kindObjectAverageValue:
		return "object/" + s.metricName
	default:
		return "external/" + s.metricName
	}
}

func (g gen) rules(tolerance string) *autoscalingv2.HPAScalingRules {
	if tolerance == "" && g.chance(0.3) {
		return nil
	}
	r := &autoscalingv2.HPAScalingRules{}
	if tolerance != "" {
		r.Tolerance = ptr(resource.MustParse(tolerance))
	}
	if g.chance(0.7) {
		r.StabilizationWindowSeconds = ptr(pick(g, int32(0), 0, 0, 15, 60, 300))
	}
	if g.chance(0.3) {
		r.SelectPolicy = ptr(pick(g, autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect))
	}
	if g.chance(0.6) {
		for range g.between(1, 3) {
			p := autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: int32(g.between(1, 5)), PeriodSeconds: pick(g, int32(15), 60, 300)}
			if g.chance(0.5) {
				p.Type, p.Value = autoscalingv2.PercentScalingPolicy, int32(pick(g, 10, 50, 100, 200, 900))
			}
			r.Policies = append(r.Policies, p)
		}
	}
	return r
}

func (c *hpaCase) hpa() *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: c.base().ns, Generation: 1},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    c.minReplicas,
			MaxReplicas:    c.maxReplicas,
			Behavior:       c.behavior.DeepCopy(), // the API defaulting of upstream's copy must not leak into ours
		},
	}
	for _, m := range c.metrics {
		h.Spec.Metrics = append(h.Spec.Metrics, m.metricSpec())
	}
	if c.scaledToZero {
		h.Status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{
			{Type: autoscalingv2.ScaledToZero, Status: corev1.ConditionTrue, Reason: "ScaledToZero", Message: "the HPA controller scaled the workload to zero"},
		}
	}
	return h
}

func (c *hpaCase) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hpa case seed=%d minReplicas=%s maxReplicas=%d scaledToZero=%t\n", c.seed, formatPtr(c.minReplicas), c.maxReplicas, c.scaledToZero)
	fmt.Fprintf(&b, "  behavior: %s\n", formatBehavior(c.behavior))
	for i, m := range c.metrics {
		fmt.Fprintf(&b, "metric %d (%s): ", i, m.identity())
		b.WriteString(m.String())
	}
	return b.String()
}

func formatPtr[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

func formatBehavior(b *autoscalingv2.HorizontalPodAutoscalerBehavior) string {
	if b == nil {
		return "nil"
	}
	rules := func(r *autoscalingv2.HPAScalingRules) string {
		if r == nil {
			return "nil"
		}
		var policies []string
		for _, p := range r.Policies {
			policies = append(policies, fmt.Sprintf("%s %d/%ds", p.Type, p.Value, p.PeriodSeconds))
		}
		tol := "nil"
		if r.Tolerance != nil {
			tol = r.Tolerance.String()
		}
		return fmt.Sprintf("{window=%s select=%s policies=[%s] tolerance=%s}", formatPtr(r.StabilizationWindowSeconds), formatPtr(r.SelectPolicy), strings.Join(policies, ", "), tol)
	}
	return fmt.Sprintf("scaleUp=%s scaleDown=%s", rules(b.ScaleUp), rules(b.ScaleDown))
}

// controllerMetrics serves every HPA's metrics to one upstream controller, by namespace and
// metric identity.
type controllerMetrics struct {
	now     time.Time
	byMetic map[string]*scenario // "<namespace>/<identity>"
}

func (m controllerMetrics) lookup(ns, identity string) (fakeMetrics, error) {
	s, ok := m.byMetic[ns+"/"+identity]
	if !ok {
		return fakeMetrics{}, fmt.Errorf("parity: the controller asked for %s in %s, which no scenario defines", identity, ns)
	}
	return fakeMetrics{s: s, now: m.now}, nil
}

func (m controllerMetrics) GetResourceMetric(ctx context.Context, res corev1.ResourceName, ns string, sel labels.Selector, container string) (metricsclient.PodMetricsInfo, time.Time, error) {
	f, err := m.lookup(ns, fmt.Sprintf("resource/%s/%s", res, container))
	if err != nil {
		return nil, time.Time{}, err
	}
	return f.GetResourceMetric(ctx, res, ns, sel, container)
}

func (m controllerMetrics) GetRawMetric(name, ns string, sel, metricSel labels.Selector) (metricsclient.PodMetricsInfo, time.Time, error) {
	f, err := m.lookup(ns, "pods/"+name)
	if err != nil {
		return nil, time.Time{}, err
	}
	return f.GetRawMetric(name, ns, sel, metricSel)
}

func (m controllerMetrics) GetObjectMetric(name, ns string, ref *autoscalingv2.CrossVersionObjectReference, metricSel labels.Selector) (int64, time.Time, error) {
	f, err := m.lookup(ns, "object/"+name)
	if err != nil {
		return 0, time.Time{}, err
	}
	return f.GetObjectMetric(name, ns, ref, metricSel)
}

func (m controllerMetrics) GetExternalMetric(name, ns string, sel labels.Selector) ([]int64, time.Time, error) {
	f, err := m.lookup(ns, "external/"+name)
	if err != nil {
		return nil, time.Time{}, err
	}
	return f.GetExternalMetric(name, ns, sel)
}

// reconciled is what one reconcile wrote: the scale (if rescaled) and the HPA status.
type reconciled struct {
	rescaled bool
	replicas int32
	status   autoscalingv2.HorizontalPodAutoscalerStatus
}

// render writes the compared parts as lines (timestamps are the controller's own clock).
func (r reconciled) render() string {
	var b strings.Builder
	if r.rescaled {
		fmt.Fprintf(&b, "scale write: %d replicas\n", r.replicas)
	} else {
		b.WriteString("scale write: none\n")
	}
	st := r.status
	fmt.Fprintf(&b, "status: currentReplicas=%d desiredReplicas=%d observedGeneration=%s lastScaleTime set=%t\n",
		st.CurrentReplicas, st.DesiredReplicas, formatPtr(st.ObservedGeneration), st.LastScaleTime != nil)
	for i, m := range st.CurrentMetrics {
		fmt.Fprintf(&b, "  currentMetrics[%d]: %s\n", i, renderStatus(m))
	}
	for _, c := range st.Conditions {
		fmt.Fprintf(&b, "  condition %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// runUpstreamController runs upstream's HorizontalController with fake clients until it has
// written the status of every HPA once, and returns what it wrote per namespace.
func runUpstreamController(cases []*hpaCase, now time.Time) (map[string]reconciled, error) {
	var objects []runtime.Object
	metrics := controllerMetrics{now: now, byMetic: map[string]*scenario{}}
	scales := map[string]*autoscalingv1.Scale{}
	for _, c := range cases {
		base := c.base()
		h := c.hpa()
		autoscalingdefaults.SetDefaults_HorizontalPodAutoscaler(h) // what the API server stores
		objects = append(objects, h)
		for _, p := range base.buildPods(now) {
			objects = append(objects, p)
		}
		for _, m := range c.metrics {
			metrics.byMetic[base.ns+"/"+m.identity()] = m
		}
		scales[base.ns] = &autoscalingv1.Scale{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: base.ns},
			Spec:       autoscalingv1.ScaleSpec{Replicas: base.specReplicas},
			Status:     autoscalingv1.ScaleStatus{Replicas: base.statusReplicas, Selector: podLabelKey + "=" + podLabelValue},
		}
	}

	var mu sync.Mutex
	out := map[string]reconciled{}
	statusWritten := map[string]bool{}
	client := fake.NewClientset(objects...)
	client.PrependReactor("update", "horizontalpodautoscalers", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() == "status" {
			h := action.(clienttesting.UpdateAction).GetObject().(*autoscalingv2.HorizontalPodAutoscaler)
			mu.Lock()
			r := out[h.Namespace]
			r.status = *h.Status.DeepCopy()
			out[h.Namespace] = r
			statusWritten[h.Namespace] = true
			mu.Unlock()
		}
		return false, nil, nil
	})
	scaleClient := &scalefake.FakeScaleClient{}
	scaleClient.AddReactor("get", "deployments", func(action clienttesting.Action) (bool, runtime.Object, error) {
		s, ok := scales[action.GetNamespace()]
		if !ok {
			return true, nil, fmt.Errorf("no scale in %s", action.GetNamespace())
		}
		return true, s.DeepCopy(), nil
	})
	scaleClient.AddReactor("update", "deployments", func(action clienttesting.Action) (bool, runtime.Object, error) {
		s := action.(clienttesting.UpdateAction).GetObject().(*autoscalingv1.Scale)
		mu.Lock()
		r := out[action.GetNamespace()]
		r.rescaled, r.replicas = true, s.Spec.Replicas
		out[action.GetNamespace()] = r
		mu.Unlock()
		return true, s, nil
	})
	mapper := apimeta.NewDefaultRESTMapper([]schema.GroupVersion{{Group: "apps", Version: "v1"}})
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, apimeta.RESTScopeNamespace)

	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logr.Discard()))
	defer cancel()
	factory := informers.NewSharedInformerFactory(client, 0)
	ctrl := podautoscaler.NewHorizontalController(ctx, client.CoreV1(), scaleClient, client.AutoscalingV2(), mapper, metrics,
		factory.Autoscaling().V2().HorizontalPodAutoscalers(), factory.Core().V1().Pods(),
		time.Hour, // resync: each HPA is reconciled exactly once during the test
		5*time.Minute, 0.1, 5*time.Minute, 30*time.Second)
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctrl.Run(ctx, 1)
	}()
	defer func() { cancel(); <-done }()

	// Every reconcile of these HPAs writes status (their conditions start empty).
	deadline := time.Now().Add(2 * time.Minute)
	for {
		mu.Lock()
		n := len(statusWritten)
		mu.Unlock()
		if n == len(cases) {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("upstream's controller wrote the status of %d of %d HPAs within 2 minutes", n, len(cases))
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	return out, nil
}

// runOursReconcile decides and applies one case with our core, as a successful scale write.
func runOursReconcile(c *hpaCase, now time.Time) reconciled {
	base := c.base()
	in := replicas.Input{
		HPA:    c.hpa(),
		Scale:  &replicas.Scale{SpecReplicas: base.specReplicas, StatusReplicas: base.statusReplicas, Selector: podLabelKey + "=" + podLabelValue},
		Pods:   base.buildPods(now),
		Now:    now,
		Config: base.config(),
	}
	for _, m := range c.metrics {
		in.Metrics = append(in.Metrics, m.metricData(now))
	}
	d := replicas.Decide(in)
	o := replicas.Apply(in, d, nil)
	return reconciled{rescaled: d.Rescale, replicas: d.DesiredReplicas, status: o.Status}
}

// TestReconcileParity runs upstream's whole HorizontalController once over random HPAs (several
// metrics, bounds, behavior, scale-to-zero) and requires our Decide+Apply to write the same scale
// and the same status: replicas, metric statuses, and conditions with their messages. Events are
// not compared (upstream records them asynchronously).
func TestReconcileParity(t *testing.T) {
	seeds := scenarioSeeds(t)
	if len(seeds) > 1 {
		seeds = seeds[:min(len(seeds), *reconcileFlag)]
	}
	cases := make([]*hpaCase, len(seeds))
	for i, seed := range seeds {
		cases[i] = newHPACase(seed, fmt.Sprintf("ns-%016x", seed))
	}
	// The controller's klog output (reconcile errors of cases that fail on purpose) is noise here.
	klog.SetLogger(logr.Discard())
	t.Cleanup(klog.ClearLogger)

	var mismatches []string
	stats := map[string]int{}
	for batch := range slices.Chunk(cases, reconcileBatch) {
		mismatches = append(mismatches, reconcileBatchParity(t, batch, stats)...)
	}
	t.Logf("%d HPAs; upstream outcomes: %s", len(cases), formatStats(stats))
	if len(mismatches) > 0 {
		shown := mismatches[:min(len(mismatches), maxReportedMismatches)]
		t.Errorf("%d of %d HPAs reconcile differently from upstream; first %d:\n\n%s", len(mismatches), len(cases), len(shown), strings.Join(shown, "\n\n"))
	}
}

// reconcileBatch HPAs share one controller run, short enough to stay within reconcileMargin.
const reconcileBatch = 100

func reconcileBatchParity(t *testing.T, cases []*hpaCase, stats map[string]int) []string {
	for attempt := 0; ; attempt++ {
		now := time.Now()
		got, err := runUpstreamController(cases, now)
		if err != nil {
			t.Fatal(err)
		}
		if time.Since(now) >= reconcileMargin*time.Second/2 {
			if attempt == 2 {
				t.Fatalf("upstream's controller took over %ds three times; pod start times are only %ds away from the CPU initialization boundary", reconcileMargin/2, reconcileMargin)
			}
			continue
		}
		var mismatches []string
		for _, c := range cases {
			up := got[c.base().ns]
			ours := runOursReconcile(c, now)
			stats[reconcileClass(c, up)]++
			if u, o := up.render(), ours.render(); u != o {
				mismatches = append(mismatches, fmt.Sprintf("upstream:\n%s\nours:\n%s\n%s  replay: cd test/parity && go test -run TestReconcileParity -seed=%d", indent(u), indent(o), c, c.seed))
			}
		}
		return mismatches
	}
}

func reconcileClass(c *hpaCase, r reconciled) string {
	switch {
	case !r.rescaled:
		return "hold"
	case r.replicas > c.base().specReplicas:
		return "up"
	default:
		return "down"
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}

package rules

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/keda"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/validation"
)

// Rule is one check: its stable ID, severity, what it checks, the peer linters' rules it
// matches, why it matters and the fix.
type Rule struct {
	ID       string
	Severity Severity
	// Title says what the rule checks.
	Title string
	// Peers are the kube-score, Polaris, kube-linter and Datree rules this one matches, or
	// why none does.
	Peers string
	Why   string
	Fix   string
	check func(*checker)
}

// All is every rule, by ID.
func All() []Rule { return append([]Rule(nil), rules...) }

// The peers' rule names are theirs: kube-score's README_CHECKS.md, Polaris' checks, kube-linter's
// checks.md and Datree's built-in rules.
var rules = []Rule{
	{
		ID: "HPA001", Severity: SeverityError, Title: "the API server would refuse the HPA",
		// No peer rule: schema validators (kubeconform) check types, not the API server's rules.
		Peers: "no peer rule (the API server's own validation)",
		Why:   "kubectl apply fails, or a GitOps sync stays out of sync",
		Fix:   "correct the field the API server names",
		check: checkValid,
	},
	{
		ID: "HPA002", Severity: SeverityWarning, Title: "minReplicas equals maxReplicas",
		Peers: "Polaris hpaMaxAvailability",
		Why:   "the HPA can never change the replica count: it only costs a controller",
		Fix:   "raise maxReplicas, or drop the HPA and set the workload's replicas",
		check: checkMinEqualsMax,
	},
	{
		ID: "HPA003", Severity: SeverityWarning, Title: "minReplicas below 2",
		Peers: "kube-score horizontalpodautoscaler-replicas, Polaris hpaMinAvailability, kube-linter hpa-minimum-three-replicas (asks for 3), Datree HPA_MISSING_MINREPLICAS_KEY (when unset)",
		Why:   "at one replica a single pod's restart or eviction is an outage",
		Fix:   "set spec.minReplicas to 2 or more",
		check: checkMinReplicas,
	},
	{
		ID: "HPA004", Severity: SeverityWarning, Title: "the scale target is not among the objects read",
		Peers: "kube-score horizontalpodautoscaler-has-target",
		Why:   "an HPA whose target does not exist scales nothing (AbleToScale=False, FailedGetScale)",
		Fix:   "correct spec.scaleTargetRef, or lint the workload's manifest with the HPA",
		check: checkTarget,
	},
	{
		ID: "HPA005", Severity: SeverityInfo, Title: "no metrics: the API server adds a cpu Utilization target of 80%",
		Peers: "no peer rule",
		Why:   "the HPA then scales on cpu, which needs cpu requests on every container",
		Fix:   "write the metrics the HPA should scale on in spec.metrics",
		check: checkNoMetrics,
	},
	{
		ID: "HPA006", Severity: SeverityError, Title: "a Utilization target on containers without a request for its resource",
		Peers: "kube-score container-resources, Polaris cpuRequestsMissing and memoryRequestsMissing (on every workload, not tied to the HPA's metrics)",
		Why:   "the controller cannot compute a utilization: ScalingActive=False (FailedGetResourceMetric), nothing scales",
		Fix:   "set resources.requests for that resource on every container and sidecar, or use an AverageValue target",
		check: checkRequests,
	},
	{
		ID: "HPA007", Severity: SeverityWarning, Title: "the workload manifest sets spec.replicas while an HPA scales it",
		Peers: "kube-score deployment-targeted-by-hpa-does-not-have-replicas-configured",
		Why:   "every apply or GitOps sync resets the replica count the HPA chose",
		Fix:   "remove spec.replicas from the workload's manifest",
		check: checkReplicasSet,
	},
	{
		ID: "HPA008", Severity: SeverityWarning, Title: "a VerticalPodAutoscaler changes the requests an HPA Utilization target divides by",
		// Only an exact controller can check this: which resources each autoscaler acts on.
		Peers: "no peer rule",
		Why:   "the VPA moves the requests, so the utilization the HPA reads moves with them: the two chase each other",
		Fix:   "scale the HPA on another metric, set the VPA's updateMode to Off, or exclude that resource from its controlledResources",
		check: checkVPA,
	},
	{
		ID: "HPA009", Severity: SeverityError, Title: "a KEDA ScaledObject scales the same workload",
		Peers: "no peer rule",
		Why:   "KEDA runs an HPA of its own on the workload: two HPAs write its replica count in turn",
		Fix:   "keep one: move the HPA's metrics into the ScaledObject, or delete the ScaledObject",
		check: checkKEDA,
	},
	{
		ID: "HPA010", Severity: SeverityWarning, Title: "a PodDisruptionBudget allows no disruption at minReplicas",
		Peers: "Polaris pdbMinAvailableGreaterThanHPAMinReplicas and pdbDisruptionsIsZero",
		Why:   "at minReplicas no pod may be evicted: node drains and cluster upgrades block",
		Fix:   "lower the PDB's minAvailable below minReplicas (or use maxUnavailable: 1), or raise minReplicas",
		check: checkPDB,
	},
	{
		ID: "HPA011", Severity: SeverityError, Title: "another HPA scales the same workload or the same pods",
		// Only an exact controller can check this: upstream's AmbiguousSelector.
		Peers: "no peer rule (upstream's AmbiguousSelector condition)",
		Why:   "the controller refuses to scale HPAs whose pods overlap (ScalingActive=False, AmbiguousSelector), or two HPAs fight over one count",
		Fix:   "keep one HPA per workload, and give each workload labels no other workload's selector matches",
		check: checkAmbiguous,
	},
	{
		ID: "HPA012", Severity: SeverityWarning, Title: "a stabilization window shorter than the sync period",
		Peers: "no peer rule",
		Why:   "the controller keeps one recommendation per sync, so a window shorter than a sync holds only the current one: it acts as no window",
		Fix:   "set the window to 0 or to at least the sync period",
		check: checkShortWindow,
	},
	{
		ID: "HPA013", Severity: SeverityWarning, Title: "the scaling policies take too long to go between minReplicas and maxReplicas",
		Peers: "no peer rule",
		Why:   "under a sustained load change the HPA stays short of (or above) what is needed for that long",
		Fix:   "raise the policy's value or shorten its periodSeconds (or the window)",
		check: checkReachTime,
	},
	{
		ID: "HPA014", Severity: SeverityInfo, Title: "a scaling policy that never binds",
		Peers: "no peer rule",
		Why:   "another policy of the same period always allows a larger change (selectPolicy Max) or a smaller one (Min): this one changes nothing",
		Fix:   "remove the policy, or change its value so that it binds where intended",
		check: checkDeadPolicy,
	},
	{
		ID: "HPA015", Severity: SeverityWarning, Title: "selectPolicy Disabled in a direction",
		Peers: "no peer rule",
		Why:   "the HPA never scales in that direction, whatever its metrics say",
		Fix:   "remove selectPolicy: Disabled, or say in a comment that it is meant",
		check: checkDisabled,
	},
	{
		ID: "HPA016", Severity: SeverityInfo, Title: "the tolerance hides one pod's worth of load at minReplicas",
		Peers: "no peer rule",
		Why:   "at minReplicas a change of one pod's worth of load stays inside the tolerance, so the HPA does not act on it",
		Fix:   "lower the tolerance for that direction (behavior.scaleUp/scaleDown.tolerance), or accept it",
		check: checkTolerance,
	},
	{
		ID: "HPA017", Severity: SeverityError, Title: "a metric the cluster does not serve",
		// The peers read manifests; the served APIs are the cluster's.
		Peers: "no peer rule (cluster mode only)",
		Why:   "the controller cannot read the metric: alone it leaves the HPA unable to scale (ScalingActive=False), beside others it blocks every scale-down",
		Fix:   "install what serves its API (metrics-server for metrics.k8s.io, a custom or external metrics adapter), or remove the metric",
		check: checkServed,
	},
	{
		ID: "HPA018", Severity: SeverityWarning, Title: "a KEDA fallback that can never apply",
		Peers: "no peer rule (KEDA's admission webhook refuses it, when installed)",
		Why:   "KEDA falls back only on the External metrics it serves itself: with only cpu and memory triggers (metrics-server's), a failing metric gets no fallback value and the HPA stops scaling",
		Fix:   "remove spec.fallback, or add a trigger KEDA serves (prometheus, a queue, ...) whose failures it can fall back on",
		check: checkKEDAFallback,
	},
	{
		ID: "HPA019", Severity: SeverityWarning, Title: "a KEDA scale to zero that wakes on any value",
		Peers: "no peer rule",
		Why:   "with minReplicaCount 0 KEDA scales 0 to 1 itself when a trigger is active, that is its value above its activation threshold, which is 0 unless set: any trace of load (a stray request, a queue of one) wakes the workload, and it sleeps again only after cooldownPeriod",
		Fix:   "set the trigger's activation threshold (activationThreshold, or its scaler's activation* key) to the load worth waking for",
		check: checkKEDAActivation,
	},
}

func checkValid(c *checker) {
	h := c.hpa
	if h.Namespace == "" {
		// A manifest without a namespace is applied to the context's.
		h = h.DeepCopy()
		h.Namespace = metav1.NamespaceDefault
	}
	for _, e := range validation.Validate(h, c.opts.Validation) {
		c.add(e.Field, e.ErrorBody())
	}
}

func checkMinEqualsMax(c *checker) {
	if m := c.minReplicas(); m == c.hpa.Spec.MaxReplicas {
		c.add("spec.maxReplicas", fmt.Sprintf("minReplicas and maxReplicas are both %d", m))
	}
}

func checkMinReplicas(c *checker) {
	switch m := c.hpa.Spec.MinReplicas; {
	case m == nil:
		c.add("spec.minReplicas", "minReplicas is unset, so 1")
	case *m == 1:
		c.add("spec.minReplicas", "minReplicas is 1")
	}
	// 0 is scale to zero: meant, and validated by HPA001.
}

func checkTarget(c *checker) {
	ref := c.hpa.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || !readKind(gv.Group, ref.Kind) || c.workload != nil {
		return
	}
	if c.hpa.Namespace == "" {
		// Manifests that name no namespace: "" is none, not a namespace to name.
		c.add("spec.scaleTargetRef", fmt.Sprintf("%s %s is not among the objects read: no file given holds it (pass the one that does with another -f)", ref.Kind, ref.Name))
		return
	}
	c.add("spec.scaleTargetRef", fmt.Sprintf("%s %s is not among the objects read in namespace %q", ref.Kind, ref.Name, c.hpa.Namespace))
}

func checkNoMetrics(c *checker) {
	if len(c.hpa.Spec.Metrics) == 0 {
		c.add("spec.metrics", fmt.Sprintf("no metrics: the API server adds cpu Utilization %d%%", validation.DefaultCPUUtilization))
	}
}

// utilizationTarget is a Resource or ContainerResource metric with a Utilization target.
type utilizationTarget struct {
	path      string
	resource  corev1.ResourceName
	container string
}

// utilizationTargets are the HPA's Utilization targets as the API server defaults them (no
// metrics: cpu).
func (c *checker) utilizationTargets() []utilizationTarget {
	metrics := c.hpa.Spec.Metrics
	if len(metrics) == 0 {
		return []utilizationTarget{{path: "spec.metrics", resource: corev1.ResourceCPU}}
	}
	var out []utilizationTarget
	for i, m := range metrics {
		p := fmt.Sprintf("spec.metrics[%d]", i)
		switch {
		case m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Target.Type == autoscalingv2.UtilizationMetricType:
			out = append(out, utilizationTarget{path: p + ".resource", resource: m.Resource.Name})
		case m.Type == autoscalingv2.ContainerResourceMetricSourceType && m.ContainerResource != nil && m.ContainerResource.Target.Type == autoscalingv2.UtilizationMetricType:
			out = append(out, utilizationTarget{path: p + ".containerResource", resource: m.ContainerResource.Name, container: m.ContainerResource.Container})
		}
	}
	return out
}

func checkRequests(c *checker) {
	w := c.workload
	if w == nil || w.template == nil {
		return
	}
	// The pod the template makes, as the core reads its requests: regular containers and
	// restartable init containers (sidecars), or pod-level requests when the gate is on.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: w.ref.Name + "-<pod>"}, Spec: *w.template.Spec.DeepCopy()}
	defaultRequestsFromLimits(&pod.Spec)
	for _, t := range c.utilizationTargets() {
		_, err := replicas.PodRequest(pod, t.container, t.resource, c.opts.PodLevelResources)
		if err == nil {
			continue
		}
		var msg string
		var re *replicas.RequestError
		switch {
		case !errors.As(err, &re):
			msg = err.Error()
		case re.NotFound:
			msg = fmt.Sprintf("the %s Utilization target names container %s, which %s's pod template does not have", t.resource, re.Container, w.ref.Kind+"/"+w.ref.Name)
		case re.Container == "":
			msg = fmt.Sprintf("the %s Utilization target needs a pod-level request for %s: the pod template sets pod-level resources without it", t.resource, t.resource)
		default:
			msg = fmt.Sprintf("the %s Utilization target divides by requests, and container %s of %s has no %s request", t.resource, re.Container, w.ref.Kind+"/"+w.ref.Name, t.resource)
		}
		c.add(t.path, msg)
	}
}

// defaultRequestsFromLimits sets, as the API server does when it creates a pod, a container's
// missing request for a resource to its limit.
func defaultRequestsFromLimits(spec *corev1.PodSpec) {
	for _, list := range [][]corev1.Container{spec.Containers, spec.InitContainers} {
		for i := range list {
			r := &list[i].Resources
			for name, limit := range r.Limits {
				if _, ok := r.Requests[name]; ok {
					continue
				}
				if r.Requests == nil {
					r.Requests = corev1.ResourceList{}
				}
				r.Requests[name] = limit.DeepCopy()
			}
		}
	}
}

func checkReplicasSet(c *checker) {
	w := c.workload
	if !c.opts.Manifests || w == nil || w.replicas == nil {
		return
	}
	c.addOn(w.ref, "spec.replicas", fmt.Sprintf("%s sets spec.replicas: %d while HPA %s scales it between %d and %d", w.ref.Kind+"/"+w.ref.Name, *w.replicas, c.hpa.Name, c.minReplicas(), c.hpa.Spec.MaxReplicas))
}

// targetRefOf reads an unstructured object's reference to a workload at path, with the kind
// and apiVersion given when the object leaves them out.
func targetRefOf(u *unstructured.Unstructured, defKind, defAPIVersion string, path ...string) (group, kind, name string, ok bool) {
	ref, found, err := unstructured.NestedMap(u.Object, path...)
	if !found || err != nil {
		return "", "", "", false
	}
	str := func(k, def string) string {
		if v, ok := ref[k].(string); ok && v != "" {
			return v
		}
		return def
	}
	gv, err := schema.ParseGroupVersion(str("apiVersion", defAPIVersion))
	if err != nil {
		return "", "", "", false
	}
	return gv.Group, str("kind", defKind), str("name", ""), true
}

// targets says whether a reference names the HPA's scale target.
func (c *checker) targets(ns, group, kind, name string) bool {
	ref := c.hpa.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && ns == c.hpa.Namespace && group == gv.Group && kind == ref.Kind && name == ref.Name
}

func checkVPA(c *checker) {
	uses := map[corev1.ResourceName]string{}
	for _, t := range c.utilizationTargets() {
		if t.resource == corev1.ResourceCPU || t.resource == corev1.ResourceMemory {
			uses[t.resource] = t.path
		}
	}
	if len(uses) == 0 {
		return
	}
	for _, v := range c.ix.objs.VerticalPodAutoscalers {
		group, kind, name, ok := targetRefOf(v, "", "", "spec", "targetRef")
		if !ok || !c.targets(v.GetNamespace(), group, kind, name) {
			continue
		}
		mode, _, _ := unstructured.NestedString(v.Object, "spec", "updatePolicy", "updateMode")
		if mode == "Off" {
			continue
		}
		if mode == "" {
			mode = "Auto (the default)"
		}
		var both []string
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := uses[res]; ok && vpaControls(v, res) {
				both = append(both, string(res))
			}
		}
		if len(both) == 0 {
			continue
		}
		ref := ObjectRef{Kind: v.GetKind(), Namespace: v.GetNamespace(), Name: v.GetName()}
		c.addOn(ref, "spec.updatePolicy.updateMode", fmt.Sprintf("VerticalPodAutoscaler %s (updateMode %s) sets the %s requests that HPA %s's Utilization targets divide by", v.GetName(), mode, strings.Join(both, " and "), c.hpa.Name))
	}
}

// vpaControls says whether a VPA changes requests of res in some container: its
// controlledResources (cpu and memory when unset) unless every container policy turns it off.
func vpaControls(v *unstructured.Unstructured, res corev1.ResourceName) bool {
	policies, _, _ := unstructured.NestedSlice(v.Object, "spec", "resourcePolicy", "containerPolicies")
	defaultOn := true
	for _, p := range policies {
		m, ok := p.(map[string]any)
		if !ok {
			continue
		}
		if name, _ := m["containerName"].(string); name != "*" {
			// A named container's policy leaves the others to the default.
			if controls(m, res) {
				return true
			}
			continue
		}
		defaultOn = controls(m, res)
	}
	return defaultOn
}

func controls(policy map[string]any, res corev1.ResourceName) bool {
	if mode, _ := policy["mode"].(string); mode == "Off" {
		return false
	}
	list, ok := policy["controlledResources"].([]any)
	if !ok {
		return true
	}
	for _, r := range list {
		if s, _ := r.(string); s == string(res) {
			return true
		}
	}
	return false
}

func checkKEDA(c *checker) {
	for _, o := range c.ix.objs.ScaledObjects {
		if keda.Owns(c.hpa, o) {
			continue
		}
		group, kind, name, ok := targetRefOf(o, "Deployment", "apps/v1", "spec", "scaleTargetRef")
		if !ok || !c.targets(o.GetNamespace(), group, kind, name) {
			continue
		}
		ref := ObjectRef{Kind: o.GetKind(), Namespace: o.GetNamespace(), Name: o.GetName()}
		c.addOn(ref, "spec.scaleTargetRef", fmt.Sprintf("ScaledObject %s scales %s %s too, through an HPA of its own", o.GetName(), kind, name))
	}
}

// scaledObject is the KEDA ScaledObject that owns the HPA, nil when none does.
func (c *checker) scaledObject() *unstructured.Unstructured {
	return keda.Owner(c.hpa, c.ix.objs.ScaledObjects)
}

func checkKEDAFallback(c *checker) {
	so := c.scaledObject()
	if so == nil {
		return
	}
	if _, found, _ := unstructured.NestedMap(so.Object, "spec", "fallback"); !found {
		return
	}
	if _, found, _ := unstructured.NestedMap(so.Object, "spec", "advanced", "scalingModifiers"); found {
		return
	}
	triggers := keda.Triggers(so)
	if len(triggers) == 0 || slices.ContainsFunc(triggers, func(t keda.Trigger) bool { return !t.IsResource() }) {
		return
	}
	ref := ObjectRef{Kind: so.GetKind(), Namespace: so.GetNamespace(), Name: so.GetName()}
	c.addOn(ref, "spec.fallback", fmt.Sprintf("ScaledObject %s has a fallback but only cpu and memory triggers, which KEDA does not serve and never falls back on", so.GetName()))
}

func checkKEDAActivation(c *checker) {
	so := c.scaledObject()
	if so == nil {
		return
	}
	if v, ok, _ := unstructured.NestedInt64(so.Object, "spec", "minReplicaCount"); ok && v > 0 {
		return
	}
	if _, ok, _ := unstructured.NestedInt64(so.Object, "spec", "idleReplicaCount"); ok {
		return
	}
	ref := ObjectRef{Kind: so.GetKind(), Namespace: so.GetNamespace(), Name: so.GetName()}
	for i, t := range keda.Triggers(so) {
		if t.IsResource() || t.HasActivation() {
			continue
		}
		c.addOn(ref, fmt.Sprintf("spec.triggers[%d].metadata", i), fmt.Sprintf("ScaledObject %s scales to zero (minReplicaCount 0), and its %s trigger sets no activation threshold: any value above 0 wakes the workload", so.GetName(), t))
	}
}

func checkPDB(c *checker) {
	w := c.workload
	if w == nil || w.template == nil {
		return
	}
	podLabels := labels.Set(w.template.Labels)
	minR := c.minReplicas()
	if minR < 1 {
		return
	}
	for _, p := range c.ix.objs.PodDisruptionBudgets {
		if p.Namespace != c.hpa.Namespace || p.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(podLabels) {
			continue
		}
		ref := ObjectRef{Kind: "PodDisruptionBudget", Namespace: p.Namespace, Name: p.Name}
		switch {
		case p.Spec.MinAvailable != nil:
			need, err := intstr.GetScaledValueFromIntOrPercent(p.Spec.MinAvailable, int(minR), true)
			if err == nil && need >= int(minR) {
				c.addOn(ref, "spec.minAvailable", fmt.Sprintf("PodDisruptionBudget %s keeps minAvailable %s: at minReplicas %d that is %d pods, so no pod may be evicted", p.Name, p.Spec.MinAvailable.String(), minR, need))
			}
		case p.Spec.MaxUnavailable != nil:
			allowed, err := intstr.GetScaledValueFromIntOrPercent(p.Spec.MaxUnavailable, int(minR), true)
			if err == nil && allowed <= 0 {
				c.addOn(ref, "spec.maxUnavailable", fmt.Sprintf("PodDisruptionBudget %s sets maxUnavailable %s: no pod may ever be evicted", p.Name, p.Spec.MaxUnavailable.String()))
			}
		}
	}
}

func checkAmbiguous(c *checker) {
	for _, other := range c.ix.objs.HPAs {
		if other == c.hpa || other.Namespace != c.hpa.Namespace {
			continue
		}
		ref := ObjectRef{Kind: "HorizontalPodAutoscaler", Namespace: other.Namespace, Name: other.Name}
		t := other.Spec.ScaleTargetRef
		gv, err := schema.ParseGroupVersion(t.APIVersion)
		if err == nil && c.targets(other.Namespace, gv.Group, t.Kind, t.Name) {
			c.addOn(ref, "spec.scaleTargetRef", fmt.Sprintf("HPA %s scales %s %s too", other.Name, t.Kind, t.Name))
			continue
		}
		ow := c.ix.workload(other.Namespace, t)
		if c.workload == nil || ow == nil || ow.template == nil || c.workload.template == nil {
			continue
		}
		// Upstream refuses both HPAs when a pod is selected by both targets' selectors; from
		// manifests, the pods are the ones each template makes.
		name := func(w *workload) string { return w.ref.Kind + "/" + w.ref.Name }
		switch {
		case ow.podSelector().Matches(labels.Set(c.workload.template.Labels)):
			c.addOn(ref, "spec.scaleTargetRef", fmt.Sprintf("the selector of %s (scaled by HPA %s) matches the pods of %s: the controller refuses both HPAs (AmbiguousSelector)", name(ow), other.Name, name(c.workload)))
		case c.workload.podSelector().Matches(labels.Set(ow.template.Labels)):
			c.addOn(ref, "spec.scaleTargetRef", fmt.Sprintf("the selector of %s matches the pods of %s (scaled by HPA %s): the controller refuses both HPAs (AmbiguousSelector)", name(c.workload), name(ow), other.Name))
		}
	}
}

func checkShortWindow(c *checker) {
	b := c.hpa.Spec.Behavior
	if b == nil {
		return
	}
	for dir, r := range map[string]*autoscalingv2.HPAScalingRules{"scaleUp": b.ScaleUp, "scaleDown": b.ScaleDown} {
		if r == nil || r.StabilizationWindowSeconds == nil {
			continue
		}
		w := time.Duration(*r.StabilizationWindowSeconds) * time.Second
		if w > 0 && w < c.opts.SyncPeriod {
			c.add("spec.behavior."+dir+".stabilizationWindowSeconds", fmt.Sprintf("the %s window of %v is shorter than the %v sync period, so it acts as no window", dir, w, c.opts.SyncPeriod))
		}
	}
}

// effectiveRules are the HPA's scaling rules in a direction as the controller acts on them; the
// HPA must have spec.behavior.
func (c *checker) effectiveRules(up bool) *autoscalingv2.HPAScalingRules {
	cfg := replicas.DefaultConfig()
	cfg.DownscaleStabilizationWindow = c.opts.DownscaleStabilizationWindow
	b := replicas.EffectiveBehavior(c.hpa, cfg)
	if up {
		return b.ScaleUp
	}
	return b.ScaleDown
}

func checkReachTime(c *checker) {
	minR, maxR := max(c.minReplicas(), 1), c.hpa.Spec.MaxReplicas
	// Without behavior the controller's legacy limits apply (at least doubling per sync up, no
	// limit down after the window): never slow, and no policy of the HPA's to name.
	if maxR <= minR || c.hpa.Spec.Behavior == nil {
		return
	}
	for _, up := range []bool{true, false} {
		r := c.effectiveRules(up)
		if unusable(r) {
			continue
		}
		from, to, within, dir := minR, maxR, c.opts.ScaleUpWithin, "scaleUp"
		if !up {
			from, to, within, dir = maxR, minR, c.opts.ScaleDownWithin, "scaleDown"
		}
		took, ok := TimeToReach(r, from, to, c.opts.SyncPeriod)
		switch {
		case !ok:
			c.add("spec.behavior."+dir, fmt.Sprintf("%s %s: %d -> %d pods takes more than a day", dir, DescribeRules(r), from, to))
		case took > within:
			c.add("spec.behavior."+dir, fmt.Sprintf("%s %s: %d -> %d pods takes %s (more than %s)", dir, DescribeRules(r), from, to, roundDuration(took), roundDuration(within)))
		}
	}
}

// unusable says whether rules cannot be played: Disabled, or a policy the API server refuses
// (HPA001 reports it).
func unusable(r *autoscalingv2.HPAScalingRules) bool {
	for _, p := range r.Policies {
		if p.Value < 1 || p.PeriodSeconds < 1 || p.PeriodSeconds > validation.MaxPolicyPeriodSeconds {
			return true
		}
	}
	return disabled(r)
}

func disabled(r *autoscalingv2.HPAScalingRules) bool {
	return r.SelectPolicy != nil && *r.SelectPolicy == autoscalingv2.DisabledPolicySelect
}

func checkDeadPolicy(c *checker) {
	if c.hpa.Spec.Behavior == nil {
		return
	}
	minR, maxR := max(c.minReplicas(), 1), c.hpa.Spec.MaxReplicas
	for _, up := range []bool{true, false} {
		r := c.effectiveRules(up)
		dir := "scaleUp"
		if !up {
			dir = "scaleDown"
		}
		set := c.hpa.Spec.Behavior.ScaleUp
		if !up {
			set = c.hpa.Spec.Behavior.ScaleDown
		}
		if set == nil || set.Policies == nil || unusable(r) {
			// Only policies the HPA writes (the defaults are upstream's choice).
			continue
		}
		for i := range r.Policies {
			if by, ok := NeverBinds(r, i, minR, maxR, up); ok {
				p, q := r.Policies[i], r.Policies[by]
				c.add(fmt.Sprintf("spec.behavior.%s.policies[%d]", dir, i), fmt.Sprintf("%s never binds: %s always allows %s from %d to %d replicas", describePolicy(p), describePolicy(q), map[bool]string{true: "more", false: "less"}[selectsLargest(r)], minR, maxR))
			}
		}
	}
}

func checkDisabled(c *checker) {
	b := c.hpa.Spec.Behavior
	if b == nil {
		return
	}
	if b.ScaleUp != nil && disabled(b.ScaleUp) {
		c.add("spec.behavior.scaleUp.selectPolicy", fmt.Sprintf("scaleUp is Disabled: the HPA stays at or below the count it has, up to %d, however high its metrics go", c.hpa.Spec.MaxReplicas))
	}
	if b.ScaleDown != nil && disabled(b.ScaleDown) {
		c.add("spec.behavior.scaleDown.selectPolicy", "scaleDown is Disabled: the HPA never removes a pod it added")
	}
}

func checkTolerance(c *checker) {
	minR := c.minReplicas()
	if minR < 1 || minR >= c.hpa.Spec.MaxReplicas {
		return
	}
	for _, up := range []bool{true, false} {
		// The smallest count the HPA scales from: minReplicas going up, one more going down.
		dir, n, at := "scaleUp", minR, fmt.Sprintf("minReplicas %d", minR)
		if !up {
			dir, n, at = "scaleDown", minR+1, fmt.Sprintf("%d replicas (minReplicas + 1)", minR+1)
		}
		tol, path, source := c.opts.Tolerance, "spec.minReplicas", "the cluster's tolerance"
		if b := c.hpa.Spec.Behavior; b != nil {
			r := b.ScaleUp
			if !up {
				r = b.ScaleDown
			}
			if r != nil && r.Tolerance != nil {
				tol, path, source = r.Tolerance.AsApproximateFloat64(), "spec.behavior."+dir+".tolerance", "the HPA's tolerance"
			}
		}
		// The controller acts only when |usage/target - 1| > tolerance; one pod's worth of
		// load at n replicas moves the ratio by 1/n.
		onePod := 1 / float64(n)
		if onePod > tol {
			continue
		}
		c.add(path, fmt.Sprintf("%s: at %s one pod's worth of load moves the usage ratio by %.1f%%, not more than %s of %g%%, so the HPA does not act on it", dir, at, 100*onePod, source, 100*tol))
	}
}

// metricsAPIs are the API group each metric type is read from.
var metricsAPIs = map[autoscalingv2.MetricSourceType]string{
	autoscalingv2.ResourceMetricSourceType:          "metrics.k8s.io",
	autoscalingv2.ContainerResourceMetricSourceType: "metrics.k8s.io",
	autoscalingv2.PodsMetricSourceType:              "custom.metrics.k8s.io",
	autoscalingv2.ObjectMetricSourceType:            "custom.metrics.k8s.io",
	autoscalingv2.ExternalMetricSourceType:          "external.metrics.k8s.io",
}

func checkServed(c *checker) {
	if c.opts.ServedAPIs == nil {
		return
	}
	for i, m := range c.hpa.Spec.Metrics {
		api, ok := metricsAPIs[m.Type]
		if !ok || c.opts.ServedAPIs[api] {
			continue
		}
		c.add(fmt.Sprintf("spec.metrics[%d]", i), fmt.Sprintf("the %s metric is read from %s, which this cluster does not serve", m.Type, api))
	}
}

func roundDuration(d time.Duration) string {
	if d >= time.Minute {
		m := int(math.Round(d.Minutes()))
		if m >= 60 {
			return fmt.Sprintf("%dh%02dm", m/60, m%60)
		}
		return fmt.Sprintf("%d min", m)
	}
	return fmt.Sprintf("%d s", int(d.Seconds()))
}

package simulate

import (
	"context"
	"fmt"
	"os"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/validation"
)

// readHPAAndWorkload reads the HPA and its workload from files (-f) or from the cluster;
// in.Source says which, in.Kube is the client the HPA was read through (nil from files).
func (o *Options) readHPAAndWorkload(ctx context.Context, vopts validation.Options) (*Input, error) {
	if o.File == "" {
		return o.readFromCluster(ctx)
	}
	hpa, err := readHPAFile(o.File, o.Namespace, vopts)
	if err != nil {
		return nil, err
	}
	// As kubectl apply -f: a namespace given with -n must not contradict the file's.
	if ns := o.ConfigFlags.Namespace; ns != nil && *ns != "" && *ns != hpa.Namespace {
		return nil, cmdutil.UsageErrorf("%s: the HPA's namespace %q does not match -n %s", o.File, hpa.Namespace, *ns)
	}
	w, err := o.workloadFromFlags(hpa)
	if err != nil {
		return nil, err
	}
	return &Input{HPA: hpa, Workload: w, Source: "file " + o.File}, nil
}

// readFromCluster reads the HPA NAME, its target's replicas and its newest pod's spec.
func (o *Options) readFromCluster(ctx context.Context) (*Input, error) {
	c, err := o.NewClients()
	if err != nil {
		return nil, err
	}
	hpa, err := c.Kube.AutoscalingV2().HorizontalPodAutoscalers(o.Namespace).Get(ctx, o.Name, metav1.GetOptions{})
	if err != nil {
		return nil, cmdutil.HPAGetError(ctx, c.Kube, c.Host, o.Namespace, o.ExplicitNamespace, o.Name, err)
	}
	ref := hpa.Spec.ScaleTargetRef
	sc, err := c.Scales.Scale(ctx, o.Namespace, ref)
	if err != nil {
		return nil, cmdutil.TargetExitError(hpa, err, c.Discovery)
	}
	sel, err := labels.Parse(sc.Selector)
	if err != nil {
		return nil, &cmdutil.ExitError{Code: cmdutil.ExitFailure, Err: fmt.Errorf("the scale of %s/%s has selector %q: %w", ref.Kind, ref.Name, sc.Selector, err)}
	}
	pods, err := c.Pods.Pods(ctx, o.Namespace, sel)
	if err != nil {
		return nil, cmdutil.APIExitError(fmt.Sprintf("listing the pods of %s/%s", ref.Kind, ref.Name), err)
	}
	newest := newestPod(pods)
	if newest == nil {
		return nil, cmdutil.UsageErrorf("%s/%s has no pods to read the requests from: %s with -f and --requests instead", ref.Kind, ref.Name, o.Command)
	}
	w := sim.Workload{Name: ref.Name, Replicas: sc.SpecReplicas, Pod: *newest.Spec.DeepCopy()}
	return &Input{HPA: hpa, Workload: w, Source: "cluster", Kube: c.Kube}, nil
}

// newestPod is the newest pod not being deleted (nil when none is): its spec is the
// template's as of the latest rollout.
func newestPod(pods []*corev1.Pod) *corev1.Pod {
	var newest *corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil && (newest == nil || newest.CreationTimestamp.Before(&p.CreationTimestamp)) {
			newest = p
		}
	}
	return newest
}

// workloadFromFlags is the -f workload: --workload's manifest, or --replicas and --requests.
func (o *Options) workloadFromFlags(hpa *autoscalingv2.HorizontalPodAutoscaler) (sim.Workload, error) {
	w := sim.Workload{Name: hpa.Spec.ScaleTargetRef.Name, Replicas: 1}
	if hpa.Spec.MinReplicas != nil && *hpa.Spec.MinReplicas > 0 {
		w.Replicas = *hpa.Spec.MinReplicas
	}
	switch {
	case o.WorkloadFile != "" && o.Requests != "":
		return w, cmdutil.UsageErrorf("--requests and --workload both give the pods' requests: give one")
	case o.WorkloadFile != "":
		replicas, pod, err := readWorkloadFile(o.WorkloadFile)
		if err != nil {
			return w, err
		}
		w.Pod = pod
		if replicas != nil {
			w.Replicas = *replicas
		}
	case o.Requests != "":
		reqs, err := parseRequests(o.Requests)
		if err != nil {
			return w, err
		}
		w.Pod = corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: reqs}}}}
	default:
		return w, cmdutil.UsageErrorf("-f needs the workload's pod requests: --requests cpu=200m[,memory=256Mi] or --workload deploy.yaml")
	}
	if o.Replicas > 0 {
		w.Replicas = o.Replicas
	}
	return w, nil
}

// parseRequests reads --requests cpu=200m,memory=256Mi.
func parseRequests(s string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, kv := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			return nil, cmdutil.UsageErrorf("--requests %q: want RESOURCE=QUANTITY[,...], e.g. cpu=200m,memory=256Mi", s)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil || q.Sign() <= 0 {
			return nil, cmdutil.UsageErrorf("--requests %s: %q is not a positive quantity", kv, value)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// readWorkloadFile reads the replicas and pod template of a Deployment, StatefulSet or
// ReplicaSet manifest, strictly.
func readWorkloadFile(path string) (*int32, corev1.PodSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, corev1.PodSpec{}, cmdutil.UsageErrorf("--workload: %v", err)
	}
	var meta metav1.TypeMeta
	if err := sigsyaml.Unmarshal(data, &meta); err != nil {
		return nil, corev1.PodSpec{}, cmdutil.UsageErrorf("--workload %s: %v", path, err)
	}
	decode := func(into any) error {
		if err := sigsyaml.UnmarshalStrict(data, into); err != nil {
			return cmdutil.UsageErrorf("--workload %s: %v", path, err)
		}
		return nil
	}
	switch meta.Kind {
	case "Deployment":
		var d appsv1.Deployment
		if err := decode(&d); err != nil {
			return nil, corev1.PodSpec{}, err
		}
		return d.Spec.Replicas, d.Spec.Template.Spec, nil
	case "StatefulSet":
		var d appsv1.StatefulSet
		if err := decode(&d); err != nil {
			return nil, corev1.PodSpec{}, err
		}
		return d.Spec.Replicas, d.Spec.Template.Spec, nil
	case "ReplicaSet":
		var d appsv1.ReplicaSet
		if err := decode(&d); err != nil {
			return nil, corev1.PodSpec{}, err
		}
		return d.Spec.Replicas, d.Spec.Template.Spec, nil
	}
	return nil, corev1.PodSpec{}, cmdutil.UsageErrorf("--workload %s: kind %q: want a Deployment, StatefulSet or ReplicaSet", path, meta.Kind)
}

package evaluation

import (
	"context"
	"slices"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TargetSelectors are the selectors of hpas' targets by HPA name, as upstream's selector store
// holds them once every HPA has synced: each target's scale read through scales. A target whose
// scale cannot be read selects nothing, as an HPA that never synced does in the store, and so
// does an empty selector (upstream fails such an HPA before it registers its selector). The
// sources that find overlaps (batch's, live's) compute them here, once per namespace.
func TargetSelectors(ctx context.Context, scales ScaleReader, namespace string, hpas []*autoscalingv2.HorizontalPodAutoscaler) map[string]labels.Selector {
	out := map[string]labels.Selector{}
	for _, h := range hpas {
		s, err := scales.Scale(ctx, namespace, h.Spec.ScaleTargetRef)
		if err != nil {
			continue
		}
		if sel, err := labels.Parse(s.Selector); err == nil && !sel.Empty() {
			out[h.Name] = sel
		}
	}
	return out
}

// OtherHPAsSelecting are the HPAs of selectors but hpa whose selector matches any of pods, as
// "namespace/name", sorted: what an OverlapFinder returns.
func OtherHPAsSelecting(hpa *autoscalingv2.HorizontalPodAutoscaler, selectors map[string]labels.Selector, pods []*corev1.Pod) []string {
	var others []string
	for name, sel := range selectors {
		if name == hpa.Name {
			continue
		}
		for _, p := range pods {
			if sel.Matches(labels.Set(p.Labels)) {
				others = append(others, hpa.Namespace+"/"+name)
				break
			}
		}
	}
	slices.Sort(others)
	return others
}

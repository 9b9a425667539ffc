// Package fakesource holds the tests' fixed readers of an evaluation.Source: one HPA (or an
// error), the same scale for every target, the same pods for every selector, and an empty
// history, as run's on its first sync. Tests only.
package fakesource

import (
	"context"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-hpa/kubectl-hpa/controller/history"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// OneHPA serves a copy of Object for every name, or Err.
type OneHPA struct {
	Object *autoscalingv2.HorizontalPodAutoscaler
	Err    error
}

func (o OneHPA) HPA(context.Context, string, string) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	if o.Err != nil {
		return nil, o.Err
	}
	return o.Object.DeepCopy(), nil
}

// Scale serves the same scale for every target.
type Scale replicas.Scale

func (f Scale) Scale(context.Context, string, autoscalingv2.CrossVersionObjectReference) (*replicas.Scale, error) {
	s := replicas.Scale(f)
	return &s, nil
}

// Pods lists the same pods for every selector.
type Pods []*corev1.Pod

func (p Pods) Pods(context.Context, string, labels.Selector) ([]*corev1.Pod, error) {
	return p, nil
}

// NoHistory is an empty history, as run's on its first sync.
type NoHistory struct{}

func (NoHistory) History(context.Context, string, string) history.Known { return history.Kept{} }

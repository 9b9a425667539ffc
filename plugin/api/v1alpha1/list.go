package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// KindList is the kind of a list of Explanations (kubectl hpa list -o json|yaml), in the
// Explanation's group and version.
const KindList = "List"

// List is several HPAs' Explanations, as kubectl hpa list -o json|yaml prints them.
type List struct {
	metav1.TypeMeta `json:",inline"`
	Items           []*Explanation `json:"items"`
}

// NewList is an empty List with apiVersion and kind set.
func NewList() *List {
	return &List{TypeMeta: metav1.TypeMeta{APIVersion: SchemeGroupVersion.String(), Kind: KindList}, Items: []*Explanation{}}
}

// DeepCopyObject implements runtime.Object (printers take runtime.Objects).
func (l *List) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &List{TypeMeta: l.TypeMeta, Items: make([]*Explanation, len(l.Items))}
	for i, e := range l.Items {
		out.Items[i], _ = e.DeepCopyObject().(*Explanation)
	}
	return out
}

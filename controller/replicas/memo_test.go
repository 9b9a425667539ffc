package replicas

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestRequestMemoGivesEachMapItsOwnValue: pods sharing one request map reuse it, and a pod with
// another map, or without the resource, is read afresh.
func TestRequestMemoGivesEachMapItsOwnValue(t *testing.T) {
	shared := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
	other := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	memOnly := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
	var memo requestMemo
	for i, tc := range []struct {
		list   corev1.ResourceList
		want   int64
		wantOK bool
	}{
		{shared, 250, true},
		{shared, 250, true},
		{other, 1000, true},
		{memOnly, 0, false},
		{nil, 0, false},
		{shared, 250, true},
	} {
		got, ok := memo.lookup(tc.list, corev1.ResourceCPU)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("lookup %d = %d, %v; want %d, %v", i, got, ok, tc.want, tc.wantOK)
		}
	}
}

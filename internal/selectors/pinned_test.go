package selectors

import (
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

func TestPinnedFindsTheFirstLabelPinnedToOneValue(t *testing.T) {
	cases := []struct {
		selector          string
		key, value        string
		whole, wantPinned bool
	}{
		{"app=web", "app", "web", true, true},
		{"app==web", "app", "web", true, true},
		{"app in (web)", "app", "web", true, true},
		{"app=web,tier!=front", "app", "web", false, true},
		{"tier!=front,app=web", "app", "web", false, true},
		{"app in (api,web)", "", "", false, false},
		{"app", "", "", false, false},
		{"!app", "", "", false, false},
		{"", "", "", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.selector, func(t *testing.T) {
			sel, err := labels.Parse(tc.selector)
			if err != nil {
				t.Fatal(err)
			}
			key, value, whole, ok := Pinned(sel)
			if key != tc.key || value != tc.value || whole != tc.whole || ok != tc.wantPinned {
				t.Errorf("Pinned(%q) = %q, %q, whole %v, ok %v; want %q, %q, whole %v, ok %v", tc.selector, key, value, whole, ok, tc.key, tc.value, tc.whole, tc.wantPinned)
			}
		})
	}
}

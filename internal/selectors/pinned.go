package selectors

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// Pinned returns the label key and value of the selector's first requirement that pins a
// label to one value (=, ==, or in with one value), and whether that requirement is the whole
// selector: then every object carrying the label matches.
func Pinned(selector labels.Selector) (key, value string, whole, ok bool) {
	reqs, selectable := selector.Requirements()
	if !selectable {
		return "", "", false, false
	}
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			if vals := r.ValuesUnsorted(); len(vals) == 1 {
				return r.Key(), vals[0], len(reqs) == 1, true
			}
		}
	}
	return "", "", false, false
}

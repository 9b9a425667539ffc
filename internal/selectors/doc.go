// Package selectors finds in a label selector the label it pins to one value, the key under
// which the pod cache and a namespace's metrics list index their pods, so that a selector
// reads only the pods that carry that label instead of every pod of the namespace.
package selectors

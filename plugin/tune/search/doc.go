// Package search searches an HPA's spec space (each metric's target, min and max, and each
// direction's tolerance, stabilization window, policies and selectPolicy) by playing every
// candidate through plugin/sim on one load, workload and model, and scores each on cost
// (pod-hours), risk (time above target, and the longest stretch) and churn (rescales per
// hour). Pure: no client-go; kubectl hpa tune (plugin/tune) reads the inputs and prints.
package search

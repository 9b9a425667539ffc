// Package list is "kubectl hpa list": every HPA of a namespace (or of all) in one table, each
// decision recomputed now through evaluation.Evaluate from reads batched per namespace
// (controller/evaluation/batch), with the constraint that binds it, where its history came
// from, and what is wrong with it. It only reads.
package list

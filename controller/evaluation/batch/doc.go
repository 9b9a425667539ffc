// Package batch is the evaluation.Source of a command that decides for every HPA of a
// namespace at once (list): each input is read once per namespace, not once per HPA — the
// HPAs (given by the caller, who lists them), the pods, the resource metrics (one PodMetrics
// list, when the metrics client is a metrics.NamespaceLister), the targeted kinds among
// Deployments, ReplicaSets, StatefulSets and ReplicationControllers, and the HPAs'
// SuccessfulRescale events. Each HPA is then served from memory exactly what live would have
// read for it: its pods and samples filtered by its own selector, as the API server filters a
// list. Other kinds' scales, Pods, Object and External metrics are read per HPA, as live reads
// them.
//
// Like live it uses client-go's clientset, and like every source it stays out of the loop
// package controller (no informers, no work queue).
package batch

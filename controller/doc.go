// Package controller is the foreground HPA control loop of kubectl hpa run, laid out as
// sample-controller's: namespace-scoped informers, a rate-limited work queue and workers, and a
// reconcile that decides each HPA through the shared evaluation path (controller/evaluation)
// and applies the result: the scale write, the status with its conditions, events, and the
// history kept for the next sync (in memory, and persisted in the HPA's annotation).
//
// Besides the loop it holds what only the loop reads through: the informer-backed scale cache
// of the built-in kinds (CachedScales), the label-indexed pod cache (PodCache, read through
// IndexedPods), which may outlive a controller (run keeps one across the terms of its Lease),
// and its transform that keeps only what decisions read (PodStripper), the tracker of overlapping
// HPAs (SelectorTracker), and, with --metrics-reads=per-namespace, the metrics reads a
// namespace's syncs share (sharedMetrics), the requeue schedule that brings its HPAs due
// together each period (namespacePasses) and the work queue's order that hands them out
// together (namespaceOrder).
//
// Subpackages, each with one job: replicas is the pure decision core (upstream's
// calculation, no I/O); evaluation is the one gather-and-decide path every command shares, and
// evaluation/live its source of live reads; history reads an HPA's past decisions from
// wherever they are kept (history/annotation is the persisted record's format); sim plays a
// load through a model of the cluster; rerun re-decides a run --record file; recording is that
// file's format; validation is the API server's HPA validation; monitor, eventsink and lease
// are run's Prometheus metrics, event writer and leader election. None of them imports this
// package.
package controller

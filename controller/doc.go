// Package controller is the foreground HPA control loop of kubectl hpa: informers, a work
// queue, and a reconcile that gathers a snapshot, asks the decision core and applies the
// result. The snapshot half (the Snapshotter) is shared with "kubectl hpa explain", so both
// commands run exactly one calculation: run reads through informer caches, explain through
// live reads.
//
// Besides the Controller and the Snapshotter, the package holds what they read through:
// the scale subresource client and its cached form for the built-in kinds, the pod
// readers, the tracker of overlapping HPAs, and the pod informer's transform that keeps
// only what decisions read.
//
// Subpackages, each with one job: replicas is the pure decision core (upstream's
// calculation, no I/O); monitor holds the Prometheus metrics; eventsink writes events and
// lets a stop wait for them; lease is the leader election that keeps two runs from writing
// at once. None of them imports this package.
package controller

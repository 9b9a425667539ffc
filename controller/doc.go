// Package controller is the foreground HPA control loop of kubectl hpa: informers, a work
// queue, and a reconcile that evaluates an HPA and applies the result. Evaluate is the one
// gather-and-decide path of every command: it reads an HPA's inputs from a Source (run's
// informer caches and memory, explain's live reads; a recording or a load model fits the
// same interface), independent reads in parallel, and asks the decision core.
//
// Besides the Controller and Evaluate, the package holds what they read through:
// the scale subresource client and its cached form for the built-in kinds, the pod
// readers, the tracker of overlapping HPAs, and the pod informer's transform that keeps
// only what decisions read.
//
// Subpackages, each with one job: replicas is the pure decision core (upstream's
// calculation, no I/O); monitor holds the Prometheus metrics; eventsink writes events and
// lets a stop wait for them; lease is the leader election that keeps two runs from writing
// at once. None of them imports this package.
package controller

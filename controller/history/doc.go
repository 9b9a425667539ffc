// Package history reads what can be known of an HPA's earlier decisions, the history its next
// decision depends on, from wherever it is kept: the record a kubectl hpa run persisted on the
// HPA (Recorded, in the format of the annotation subpackage), the cluster controller's memory
// inferred from the evidence the cluster keeps (Events and Infer: the HPA's creation and
// status, SuccessfulRescale events, the Deployments' ReplicaSet resizes, and the leader Leases of
// kube-controller-manager and kubectl hpa run: who decides, since when), a replay of its metrics from Prometheus through the decision core (Prometheus;
// ReplayPeriod for every sync of a period, as timeline shows them),
// or a history its holder kept itself (Kept: run's memory, a simulation's state). Each is a
// Known; the evaluation path asks a source for one per HPA.
package history

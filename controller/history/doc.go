// Package history reads what can be known of an HPA's earlier decisions, the history its next
// decision depends on, from wherever it is kept: the record a kubectl hpa run persisted on the
// HPA (Recorded, in the format of the annotation subpackage), the HPA's SuccessfulRescale
// events (Events, a reconstruction), a replay of its metrics from Prometheus through the
// decision core (Prometheus), or a history its holder kept itself (Kept: run's memory, a
// simulation's state). Each is a Known; the evaluation path asks a source for one per HPA.
package history

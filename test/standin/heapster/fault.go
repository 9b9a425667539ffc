package heapsterstandin

import (
	"fmt"
	"time"
)

// FaultKind names a way the stand-in misbehaves for one namespace.
type FaultKind string

const (
	// FaultGarbage answers 200 with Body (default: an HTML page), which is not JSON, as a
	// crashed Heapster behind a web proxy does.
	FaultGarbage FaultKind = "garbage"
	// FaultItemCount answers ItemDelta more (positive) or fewer (negative) items than it
	// should. Extra metrics/v1alpha1 items repeat pods already listed (the API is asked by
	// selector, so only a repeat is recognisably too many); extra model API items are
	// empty series beyond the pods asked for. Fewer items drop the last ones.
	FaultItemCount FaultKind = "item-count"
	// FaultStale dates every sample Age earlier, as a Heapster that stopped scraping but
	// still serves its last batch.
	FaultStale FaultKind = "stale"
	// FaultStatus answers Status (default 500) with Body as text.
	FaultStatus FaultKind = "status"
	// FaultSlow holds every answer for Delay, or until the client gives up (counted in
	// Stats.Abandoned).
	FaultSlow FaultKind = "slow"
)

// DefaultGarbageBody and DefaultStatusBody are what FaultGarbage and FaultStatus answer
// without a Body.
const (
	DefaultGarbageBody = "<html><head><title>502 Bad Gateway</title></head><body>heapster is restarting</body></html>"
	DefaultStatusBody  = "Internal Error: failed to read the metric sink"
)

// Fault makes the stand-in misbehave for the namespace it is set for (Scenario.Faults):
// requests about other namespaces and /healthz are answered normally.
type Fault struct {
	Kind FaultKind `json:"kind"`
	// Body is the answer of FaultGarbage and FaultStatus.
	Body string `json:"body,omitempty"`
	// Status is the HTTP status of FaultStatus.
	Status int `json:"status,omitempty"`
	// ItemDelta is how many items FaultItemCount adds (> 0) or drops (< 0).
	ItemDelta int `json:"itemDelta,omitempty"`
	// Age is how much older FaultStale makes every timestamp (in JSON: nanoseconds).
	Age time.Duration `json:"age,omitempty"`
	// Delay is how long FaultSlow holds an answer (in JSON: nanoseconds).
	Delay time.Duration `json:"delay,omitempty"`
}

// Validate reports a fault whose settings do not fit its kind.
func (f Fault) Validate() error {
	switch f.Kind {
	case FaultGarbage:
	case FaultItemCount:
		if f.ItemDelta == 0 {
			return fmt.Errorf("fault %s needs a non-zero itemDelta", f.Kind)
		}
	case FaultStale:
		if f.Age <= 0 {
			return fmt.Errorf("fault %s needs a positive age", f.Kind)
		}
	case FaultStatus:
		if f.Status != 0 && (f.Status < 400 || f.Status > 599) {
			return fmt.Errorf("fault %s: status %d is not an HTTP error", f.Kind, f.Status)
		}
	case FaultSlow:
		if f.Delay <= 0 {
			return fmt.Errorf("fault %s needs a positive delay", f.Kind)
		}
	default:
		return fmt.Errorf("unknown fault kind %q", f.Kind)
	}
	return nil
}

// body returns the fault's body or the kind's default.
func (f Fault) body() string {
	switch {
	case f.Body != "":
		return f.Body
	case f.Kind == FaultGarbage:
		return DefaultGarbageBody
	}
	return DefaultStatusBody
}

// Stats counts the Heapster API requests about one namespace.
type Stats struct {
	// Requests is how many requests arrived.
	Requests int
	// Abandoned is how many were given up by the client before a slow answer was sent.
	Abandoned int
}

package history

import (
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/kubectl-hpa/kubectl-hpa/controller/history/annotation"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// Recorded is the history a kubectl hpa run persisted on an HPA, restored for a decision.
type Recorded struct {
	Record   annotation.Record
	Restored annotation.Restored
}

// ReadRecorded reads the history persisted on hpa for a decision at now under cfg; the
// newest recommendation counts as current until openUntil (clamped to [written, now]). ok is
// false without an annotation; err (a *annotation.Error) says why one is not used.
func ReadRecorded(hpa *autoscalingv2.HorizontalPodAutoscaler, cfg replicas.Config, now, openUntil time.Time) (rec Recorded, ok bool, err error) {
	value, has := hpa.Annotations[annotation.Key]
	if !has {
		return rec, false, nil
	}
	r, err := annotation.Decode(value)
	if err != nil {
		return rec, true, err
	}
	restored, err := annotation.Restore(r, hpa, cfg, annotation.FieldManager, now, openUntil)
	if err != nil {
		return rec, true, err
	}
	return Recorded{Record: r, Restored: restored}, true, nil
}

// IgnoredMessage is the one line saying a persisted history is not used, and instead
// what is done.
func IgnoredMessage(namespace, name string, err error, instead string) string {
	return fmt.Sprintf("ignoring the decision history recorded on HPA %s/%s (annotation %s): %v; %s",
		namespace, name, annotation.Key, err, instead)
}

package replicas

// Settle is a reconcile's bookkeeping once its scale write (if any) was tried: the
// outcome upstream's reconcileAutoscaler builds after the write (status, post-write events,
// reconcile error; Apply) and the history the controller keeps for the next sync.
// scaleErr is the write's result (nil when no write was sent). persisted says the writes
// were real: a dry run keeps the decision's history without the scale event, so it never
// pretends a rescale happened. run, the simulator and replay all keep history through this
// one function, so they keep it alike. Settle is pure and never mutates in or d.
func Settle(in Input, d Decision, scaleErr error, persisted bool) (Outcome, History) {
	out := Apply(in, d, scaleErr)
	if persisted && scaleErr == nil {
		return out, out.History
	}
	return out, d.History
}

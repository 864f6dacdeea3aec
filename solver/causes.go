package solver

// causeOf is the Cause of a failure that stopped at stage; def stands in for stageNone.
func causeOf(stage, def int) Cause {
	if stage == stageNone {
		stage = def
	}
	switch stage {
	case stageTaint:
		return CauseTaints
	case stageReqs:
		return CauseRequirements
	case stageResources:
		return CauseResources
	case stageLimits:
		return CauseLimits
	case stageTopology:
		return CauseTopology
	}
	return CauseNoCapacity
}

// noteCause records a failure like note, with its cause and the NodePool it names.
func (f *failure) noteCause(stage int, cause Cause, pool, msg string) {
	if stage > f.stage {
		*f = failure{stage: stage, msg: msg, retry: stage == stageTopology, cause: cause}
		if cause == CauseLimits {
			f.pool = pool
		}
	}
}

// unschedulable is the report for the pods of c left unplaced (Pod unset).
func (c *class) unschedulable() Unschedulable {
	if c.err != "" {
		cause := c.errCause
		if cause == "" {
			cause = CauseInvalidSpec
		}
		return Unschedulable{Reason: c.err, Cause: cause}
	}
	u := Unschedulable{Reason: c.fail.msg, Cause: c.fail.cause, NodePool: c.fail.pool}
	if u.Cause == "" {
		u.Cause = causeOf(c.fail.stage, stageNone)
	}
	if u.Reason == "" {
		u.Reason = "no node can take the pod"
	}
	if c.dealt != "" {
		u.Reason += " (" + c.dealt + ")"
	}
	return u
}

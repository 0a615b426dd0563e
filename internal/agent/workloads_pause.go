package agent

import (
	"fmt"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/errdefs"
)

// Outcomes of rollout pause and resume, as kubectl prints them.
const (
	outcomePaused  = "paused"
	outcomeResumed = "resumed"
)

// objectError is an error with kubectl's text, of an errdefs kind (which
// sets the API's status code) that its text does not repeat.
type objectError struct {
	msg  string
	kind error
}

func (e *objectError) Error() string { return e.msg }
func (e *objectError) Unwrap() error { return e.kind }

// rolloutError is kubectl rollout's error about one object, as
// `deployments.apps "web" is already paused`.
func rolloutError(resource string, o *workloadObj, what string, kind error) error {
	group := "apps"
	if o.job != nil || o.cj != nil {
		group = "batch"
	}
	return &objectError{msg: fmt.Sprintf("%s.%s %q %s", resource, group, o.meta().Name, what), kind: kind}
}

// pauseLocked sets or clears a Deployment's spec.paused, as kubectl
// rollout pause and resume patch it: a spec change (its generation moves),
// saved before the controllers see it, so a restarted agent keeps it.
// StatefulSets and DaemonSets have no pause.
func (a *Agent) pauseLocked(resource string, o *workloadObj, pause bool) (agentapi.ApplyResult, error) {
	if o.d == nil {
		what := "resuming is not supported"
		if pause {
			what = "pausing is not supported"
		}
		return agentapi.ApplyResult{}, rolloutError(resource, o, what, errdefs.ErrInvalidArgument)
	}
	if o.d.Spec.Paused == pause {
		what := "is not paused"
		if pause {
			what = "is already paused"
		}
		return agentapi.ApplyResult{}, rolloutError(resource, o, what, errdefs.ErrFailedPrecondition)
	}
	next := o.copy()
	next.d.Spec.Paused = pause
	outcome := outcomeResumed
	if pause {
		outcome = outcomePaused
	}
	return a.updateLocked(o, next, outcome)
}

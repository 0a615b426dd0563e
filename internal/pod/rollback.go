package pod

import (
	"context"
	"log/slog"
	"time"
)

// undoTimeout bounds the whole rollback of one failed create.
const undoTimeout = 30 * time.Second

// rollback collects undo steps while an object is being created. If the
// create fails, run undoes them in reverse order under a fresh context, so a
// cancelled request still cleans up after itself.
type rollback struct {
	steps []undoStep
}

type undoStep struct {
	name string
	fn   func(ctx context.Context) error
}

func (r *rollback) add(name string, fn func(ctx context.Context) error) {
	r.steps = append(r.steps, undoStep{name: name, fn: fn})
}

// run undoes every step, newest first, and logs (but does not stop on) errors.
func (r *rollback) run(ctx context.Context, log *slog.Logger, object string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	for i := len(r.steps) - 1; i >= 0; i-- {
		step := r.steps[i]
		if err := step.fn(ctx); err != nil {
			log.Warn("rollback step failed", "object", object, "step", step.name, "error", err)
		}
	}
	r.steps = nil
}

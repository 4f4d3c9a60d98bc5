// Run strings the stages together. In the file order doc.go gives it comes
// after every stage, so each stage it calls is declared above it.

package locktorture

import "context"

// Run performs one run. It returns an error for bad options (a *UsageError)
// or a harness failure; a lock that breaks is not an error but a verdict.
// Cancelling ctx ends the run early: what was recorded is still checked and
// written, and everything the run started is stopped before Run returns.
func Run(ctx context.Context, opts Options) (*Result, error) {
	pl, err := newPlan(opts)
	if err != nil {
		return nil, err
	}
	r, err := newRun(pl)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if r.env, err = startEnv(ctx, pl); err != nil {
		return nil, err
	}
	if r.clients, err = startClients(ctx, pl, r.env, r.info, r.hist, r.res.Dir); err != nil {
		return nil, err
	}
	if err := r.runSchedule(ctx); err != nil {
		return nil, err
	}
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	if err := r.write(ctx); err != nil {
		return nil, err
	}
	return r.res, nil
}

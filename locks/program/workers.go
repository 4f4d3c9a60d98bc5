package program

import (
	"context"

	"github.com/locktorture/locktorture/locks"
)

// workers serve a lock program's requests, one goroutine per client: in
// protocol version 2 the clients that share the lock object (--share) call
// it at once, as the threads of a real program do, which is the point of
// sharing it; in version 1 there is one client, served in order.
type workers struct {
	ctx  context.Context
	s    *server
	lk   locks.Lock
	per  map[int]chan Request
	done chan error // the first error a worker met
}

func (s *server) newWorkers(ctx context.Context, lk locks.Lock) *workers {
	return &workers{ctx: ctx, s: s, lk: lk, per: map[int]chan Request{}, done: make(chan error, 1)}
}

// send hands r to its client's worker, starting the worker on the
// client's first request; an error is a worker's, which ends the program.
func (w *workers) send(r Request) error {
	client := 0
	if w.s.shared && r.Client != nil {
		client = *r.Client
	}
	ch := w.per[client]
	if ch == nil {
		ch = make(chan Request, 1)
		w.per[client] = ch
		go func() {
			if err := w.s.work(w.ctx, w.lk, ch); err != nil {
				select {
				case w.done <- err:
				default:
				}
			}
		}()
	}
	select {
	case ch <- r:
		return nil
	case err := <-w.done:
		return err
	}
}

// close ends every worker once its requests are served.
func (w *workers) close() {
	for _, ch := range w.per {
		close(ch)
	}
}

// The pause-client fault: a client stopped as by a long GC pause while its
// lease runs out, which then goes on as if it still held the lock, with its
// entry.

package nemesis

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	"github.com/locktorture/locktorture/internal/sleep"
)

// pauseClient stops one client the way a long GC pause or SIGSTOP would: its
// loop, its watchdog and its connections all stop, also between sending a
// command and reading the reply, while its lease runs out in Redis. When it
// resumes it goes on as if it still held the lock.
//
// Aimed (the default), it stops a client (seeded) right after one of its
// acquires (the step numbered from the seed), before its work begins, and
// keeps it stopped until its lease has expired and a margin has passed for
// another client to take the key: every lease lock shows two holders, the
// paused one past its lease. Blind, it stops a random client wherever it is.
type pauseClient struct {
	gate  Gate
	until time.Time // an aimed pause lasts at least until then
}

// namePauseClient is the fault's one name: its entry's and its own.
const namePauseClient = "pause-client"

// pauseClientEntry is the registry entry of pause-client, which reads no settings of its own.
func pauseClientEntry() Entry {
	return Entry{Name: namePauseClient,
		Summary: "stop-the-world pause of one client: its loop, watchdog and connections stop",
		New:     newPauseClient}
}

func newPauseClient(Options) Fault { return &pauseClient{} }

func (f *pauseClient) Name() string { return namePauseClient }

// Aims implements Aiming.
func (f *pauseClient) Aims() bool { return true }

func (f *pauseClient) Available(t *Target) error { return needClients(t) }

// outlive is how long past a lease's expiry an aimed pause lasts: time for
// a waiting client to retry and win the key.
func outlive(ttl time.Duration) time.Duration { return max(ttl/2, 50*time.Millisecond) }

func (f *pauseClient) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	c := rng.Intn(t.Clients.Count())
	if t.aiming() {
		var paused time.Time
		e, err := t.next(ctx, Filter{Kind: Acquired, Client: c, Skip: aimSkip(rng), Act: func(e ProtocolEvent) {
			e.Gate.Pause() // before the client's work begins
			paused = time.Now()
			aimed(mark, aimAt(e))
			mark.Began(fmt.Sprintf("%s (paused holding %s until %v past its lease)", ClientName(e.Client), e.Key, outlive(t.TTL)))
		}})
		if err != nil {
			return err
		}
		f.gate = e.Gate
		// Past the lease by the client's own clock too: a watchdog that
		// renewed just before the pause keeps the key a TTL longer.
		ttl := e.TTL
		if ttl <= 0 {
			ttl = t.TTL
		}
		f.until = paused.Add(ttl + outlive(t.TTL))
		return nil
	}
	g := t.Clients.Gate(c)
	if g == nil {
		return fmt.Errorf("client %d has no live process", c)
	}
	g.Pause()
	f.gate, f.until = g, time.Time{}
	mark.Began(ClientName(c))
	return nil
}

// Heal resumes the client, not before an aimed pause has outlived the lease.
func (f *pauseClient) Heal(ctx context.Context, t *Target) error {
	if f.gate == nil {
		return nil
	}
	sleep.For(ctx, time.Until(f.until))
	f.gate.Resume()
	f.gate = nil
	return nil
}

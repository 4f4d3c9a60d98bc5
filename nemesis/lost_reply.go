// The lost-reply fault: a command that runs on Redis while its reply is
// lost, so go-redis replays it (an orphaned lock, a DEL of the next
// holder's key), with its entry and its lost-reply-rate setting.

package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"time"

	"github.com/locktorture/locktorture/cluster"
	"github.com/locktorture/locktorture/internal/sleep"
	"github.com/locktorture/locktorture/settings"
)

// lostReply drops every reply from one node for short bursts, again and
// again while it is active: a command sent during a burst runs on Redis but
// its client never hears back. The bursts are shorter than a client's read
// timeout, so go-redis's own retry (on by default) replays the command on a
// fresh connection: a SET NX that already succeeded now answers "not
// acquired" (an orphaned lock, reported as spurious-failure), and a DEL
// replayed after the key changed hands deletes the next holder's lock.
type lostReply struct {
	toxicFault
	burst, gap time.Duration

	stop context.CancelFunc
	done chan struct{}
}

// nameLostReply is the fault's one name: its entry's, its toxics', its own.
const nameLostReply = "lost-reply"

// lostReplyEntry is the registry entry of lost-reply, with the settings it reads.
func lostReplyEntry() Entry {
	return Entry{Name: nameLostReply,
		Summary:  "the command runs on Redis, its reply never reaches the client (short bursts; go-redis retries replay it)",
		New:      newLostReply,
		Settings: []settings.Setting{setDirection(), setLostReplyRate()}}
}

// setLostReplyRate is the share of the time lost-reply drops replies.
func setLostReplyRate() settings.Setting {
	return settings.Setting{Name: "lost-reply-rate", Kind: settings.Float, Default: "0.2",
		Help: "share of the time lost-reply drops replies, in 20ms bursts"}
}

func newLostReply(o Options) Fault {
	rate := o.Float("lost-reply-rate")
	if rate <= 0 || rate > 1 {
		rate = 0.2
	}
	burst := 20 * time.Millisecond
	return &lostReply{
		toxicFault: toxicFault{name: nameLostReply, toxic: "timeout", direction: orDefault(o.String("direction"), "down"),
			toxicity: 1, pick: everyClientToOneNode,
			attrs: dropAll},
		burst: burst,
		gap:   time.Duration(float64(burst) * (1 - rate) / rate),
	}
}

// Start picks the node and begins the bursts.
func (f *lostReply) Start(ctx context.Context, t *Target, rng *rand.Rand, mark Marker) error {
	paths, what := everyClientToOneNode(t, rng)
	if len(paths) == 0 {
		return errors.New("no path to act on")
	}
	f.pick = func(*Target, *rand.Rand) ([]*cluster.Path, string) { return paths, what }
	bctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	f.stop, f.done = stop, make(chan struct{})
	brng := rand.New(rand.NewSource(rng.Int63()))
	aim := t.aimsAtClients()
	if aim {
		what += ", each burst on an acquire or release in flight"
		aimed(mark, Aim{Client: -1, Step: "acquires and releases in flight"})
	}
	mark.Began(fmt.Sprintf("%s (%s, bursts of %v)", what, f.direction, f.burst))
	go func() {
		defer close(f.done)
		for {
			if aim {
				// The burst begins as a client is about to send an
				// acquire or a release to the node.
				fl := inFlight(brng, -1)
				if fl.Kind == Acquiring {
					// The attempt that wins: its SET runs, its ok is
					// lost, and a replayed SET NX finds its own key (a
					// reentrant lock's replayed acquire, nested or not,
					// counts the hold twice).
					fl = Filter{Kind: Point, Points: []string{"attempt"}, Client: -1, Free: true}
				}
				fl.Skip = 0
				if _, err := t.Protocol.Next(bctx, f.burstOn(bctx, t, fl, paths)); err != nil {
					return
				}
			} else if err := f.toxicFault.Start(bctx, t, brng, quiet{}); err != nil {
				return
			}
			sleep.For(bctx, f.burst)
			_ = f.toxicFault.Heal(context.WithoutCancel(bctx), t)
			if !sleep.For(bctx, jitter(brng, f.gap)) {
				return
			}
		}
	}()
	return nil
}

// burstOn returns fl with an Act that drops the replies on the paths to the
// node of the client at the step.
func (f *lostReply) burstOn(ctx context.Context, t *Target, fl Filter, paths []*cluster.Path) Filter {
	fl.Act = func(e ProtocolEvent) {
		var mine []*cluster.Path
		for _, p := range paths {
			if p.From == ClientName(e.Client) {
				mine = append(mine, p)
			}
		}
		f.toxicFault.pick = func(*Target, *rand.Rand) ([]*cluster.Path, string) { return mine, "" }
		_ = f.toxicFault.Start(ctx, t, nil, quiet{})
	}
	return fl
}

// Aims implements Aiming: false, the fault stays on for its time, but each
// burst, aimed, lands on an acquire attempt sent while nobody holds the key
// (the one that wins) or, one time in three, on a release.
func (f *lostReply) Aims() bool { return false }

// Heal stops the bursts and removes the toxic.
func (f *lostReply) Heal(ctx context.Context, t *Target) error {
	if f.stop == nil {
		return nil
	}
	f.stop()
	<-f.done
	f.stop = nil
	return f.toxicFault.Heal(ctx, t)
}

package workloads

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/locktorture/locktorture/history"
	"github.com/redis/go-redis/v9"
)

// StockOptions shape the stock workload.
type StockOptions struct {
	MutexOptions
	// Lua sells with one atomic script and no lock at all (the seed's
	// better answer) instead of under the lock.
	Lua bool
	// Units is the stock of each sale. Zero means 5.
	Units int
	// Users is how many distinct buyers each sale draws from; each may buy
	// once. Zero means twice Units.
	Users int
}

// sellScript is the seed's flash sale in one script (不是银弹: "Redis 的原子
// 性还可以通过 Lua 脚本来实现"): check the stock, check the user, take one
// unit and record the user, atomically. A missing stock key is a sale that
// is over: the script never creates stock, so a Redis that restarts empty
// ends the sale early (orders lost, nothing sold twice).
// Returns 1 sold, 0 sold out, -1 the user already bought.
var sellScript = redis.NewScript(`
local s = tonumber(redis.call('get', KEYS[1]) or '0')
if s <= 0 then
  return 0
end
if redis.call('sismember', KEYS[2], ARGV[1]) == 1 then
  return -1
end
redis.call('decr', KEYS[1])
redis.call('sadd', KEYS[2], ARGV[1])
return 1`)

// Stock is the stock workload, seed 000's flash sale (秒杀扣库存). Each lock
// key guards one item, sold in successive sales of Units units; a buyer
// draws a user and buys one unit of the current sale, each user at most
// once per sale. When a sale is sold out the next buyer starts the next one
// (SET NX of its stock, recorded as restock). The sale's keys live on the
// lock's Redis, reached through the client's own connection, so faults hit
// them too.
//
// Under the lock (stock) the buyer does what code that trusts its lock does:
// GET the stock, SISMEMBER the user, work, DECR without looking at the
// result, SADD the user. Two holders at once both pass the checks: a unit
// sold twice (oversell) or a user served twice (double-buy). The seed's own
// code checks DECR's result, which is the atomicity that makes the lock
// unnecessary for the stock, and is what the Lua variant (stock-lua) does
// in one script without any lock.
type Stock struct {
	opts StockOptions

	mu     sync.Mutex
	rounds map[int]int64 // current sale of each item
}

// NewStock returns the stock workload.
func NewStock(opts StockOptions) (*Stock, error) {
	if err := checkShape(&opts.MutexOptions); err != nil {
		return nil, err
	}
	if opts.Units < 0 || opts.Users < 0 {
		return nil, fmt.Errorf("stock units %d and users %d must not be negative", opts.Units, opts.Users)
	}
	if opts.Units == 0 {
		opts.Units = 5
	}
	if opts.Users == 0 {
		opts.Users = 2 * opts.Units
	}
	return &Stock{opts: opts, rounds: map[int]int64{}}, nil
}

// Name implements Workload.
func (w *Stock) Name() string {
	if w.opts.Lua {
		return "stock-lua"
	}
	return "stock"
}

// StockKey names the stock of sale round of item i (the item lock key Key(i)
// guards).
func StockKey(i int, round int64) string { return fmt.Sprintf("sale:%d:%d:stock", i, round) }

// UsersKey names the set of the users who bought in a sale.
func UsersKey(i int, round int64) string { return fmt.Sprintf("sale:%d:%d:users", i, round) }

func (w *Stock) round(item int) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rounds[item]
}

// Step implements Workload.
func (w *Stock) Step(ctx context.Context, p *Process) error {
	item := p.Rand.Intn(w.opts.Keys)
	user := int64(1 + p.Rand.Intn(w.opts.Users))
	round := w.round(item)
	var soldOut bool
	var err error
	if w.opts.Lua {
		soldOut, err = w.buyLua(ctx, p, item, round, user)
	} else {
		soldOut, err = w.buyLocked(ctx, p, item, round, user)
	}
	if err != nil {
		return err
	}
	if soldOut {
		if err := w.nextSale(ctx, p, item, round); err != nil {
			return err
		}
	}
	if w.opts.Think > 0 {
		return p.Gate.Sleep(ctx, w.opts.Think)
	}
	return nil
}

// buyLua is one atomic script, no lock.
func (w *Stock) buyLua(ctx context.Context, p *Process, item int, round, user int64) (soldOut bool, err error) {
	if err := p.Gate.Step(ctx, "buy"); err != nil {
		return false, err
	}
	sk := w.opts.KeyPrefix + StockKey(item, round)
	done := resourceOp(p, history.Event{Op: history.Buy, Key: sk, Value: history.Int64(user)})
	n, err := sellScript.Run(ctx, p.Nodes[0], []string{sk, w.opts.KeyPrefix + UsersKey(item, round)}, user).Int64()
	switch {
	case died(err):
		done.died(err)
		return false, err
	case err != nil:
		done.done(history.Unknown, history.Event{Error: err.Error()})
	case n == 1:
		done.done(history.OK, history.Event{})
	case n == 0:
		done.done(history.Fail, history.Event{Error: "sold out"})
		return true, nil
	default:
		done.done(history.Fail, history.Event{Error: "already bought"})
	}
	return false, nil
}

// buyLocked is the sale under the lock, one command at a time.
func (w *Stock) buyLocked(ctx context.Context, p *Process, item int, round, user int64) (soldOut bool, err error) {
	h, err := take(ctx, p, w.opts.MutexOptions, w.opts.Key(item))
	if err != nil || h == nil {
		return false, err
	}
	if err := p.Gate.Step(ctx, "hold"); err != nil {
		return false, err
	}
	sk, uk := w.opts.KeyPrefix+StockKey(item, round), w.opts.KeyPrefix+UsersKey(item, round)
	rdb := p.Nodes[0]
	buy := resourceOp(p, history.Event{Op: history.Buy, Key: sk, Value: history.Int64(user)})
	outcome, err := func() (history.Type, error) {
		s, err := rdb.Get(ctx, sk).Int64()
		if errors.Is(err, redis.Nil) {
			s, err = 0, nil
		}
		if err != nil {
			return history.Fail, err // nothing written yet
		}
		if s <= 0 {
			soldOut = true
			return history.Fail, errors.New("sold out")
		}
		member, err := rdb.SIsMember(ctx, uk, user).Result()
		if err != nil {
			return history.Fail, err
		}
		if member {
			return history.Fail, errors.New("already bought")
		}
		if err := p.Gate.Sleep(ctx, h.work); err != nil {
			return history.Unknown, err
		}
		if err := p.Gate.Step(ctx, "sell"); err != nil {
			return history.Unknown, err
		}
		if err := rdb.Decr(ctx, sk).Err(); err != nil {
			return history.Unknown, err
		}
		if err := rdb.SAdd(ctx, uk, user).Err(); err != nil {
			return history.Unknown, err
		}
		return history.OK, nil
	}()
	if died(err) {
		buy.died(err)
		return false, err
	}
	buy.done(outcome, history.Event{Error: errText(err)})
	return soldOut, finish(ctx, p, h.lease, h.abandon, 0)
}

// nextSale starts sale round+1 of item unless someone already did: SET NX
// of its stock (recorded as restock, Value: units), then the harness moves
// every buyer to it. SET NX makes racing starters harmless: a sale's stock
// is written once.
func (w *Stock) nextSale(ctx context.Context, p *Process, item int, round int64) error {
	if w.round(item) != round {
		return nil
	}
	if err := p.Gate.Step(ctx, "restock"); err != nil {
		return err
	}
	sk := w.opts.KeyPrefix + StockKey(item, round+1)
	done := resourceOp(p, history.Event{Op: history.Restock, Key: sk, Value: history.Int64(int64(w.opts.Units))})
	set, err := p.Nodes[0].SetNX(ctx, sk, w.opts.Units, 0).Result()
	switch {
	case died(err):
		done.died(err)
		return err
	case err != nil:
		done.done(history.Unknown, history.Event{Error: err.Error()})
		return nil // try again on the next sold-out
	case set:
		done.done(history.OK, history.Event{})
	default:
		done.done(history.Fail, history.Event{Error: "already stocked"})
	}
	w.mu.Lock()
	if w.rounds[item] == round {
		w.rounds[item] = round + 1
	}
	w.mu.Unlock()
	return nil
}

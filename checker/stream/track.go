package stream

import (
	"math"
	"slices"

	"github.com/locktorture/locktorture/history"
)

// What a Stream knows of each operation and lease between windows: enough
// to keep, when a window is pruned, every operation a later window may need
// (the operations of a lease that is still held or may still be alive, and
// what ended its hold).

// forever stands for "no end" in lease arithmetic, as in the checkers.
const forever = history.Never

type leaseKey struct{ key, lease string }

// leaseInfo is what the stream knows of one lease: whether its hold is
// still open, until when it may be alive, and what to keep with it.
type leaseInfo struct {
	key      leaseKey
	ops      []int64 // its operations' ids
	acquired bool    // an ok acquire returned
	held     bool    // the hold is open (ok acquire, no release call, crash or unknown after it)
	nested   bool    // a nested acquire took it under a token of its own
	process  int
	until    int64 // the latest it may be alive; forever without TTL
	last     int64 // the latest event of its operations
	open     int   // its operations not completed
	ender    int64 // the op id that ended the hold with an unknown outcome, 0 if none
	gone     bool  // a release of it deleted the key: it is surely over
	crash    int64 // the index of the crash event that ended the hold, -1 if none
	ttl      int64 // its acquire's ttl, for writes that name none
	since    int64 // the earliest call of its operations
	// unknown are its writes of unknown outcome: each may keep the key a
	// ttl past the heal of a fault active while it ran (see alive).
	unknown []unknownWrite
	// disturbAt is the latest completion of an operation of it that may
	// have taken the key from another lease's holder (a release that
	// deleted, or whose outcome is unknown; an ok acquire): a release of
	// that lease judged later must see it (see prune).
	disturbAt int64
}

// unknownWrite is a write of unknown outcome: called at call, given up on
// at ret, with ttl.
type unknownWrite struct{ call, ret, ttl int64 }

type opInfo struct {
	lease *leaseInfo
	key   string
	call  int64
	last  int64
	done  bool
}

// track updates what the stream knows of the operation, lease and process
// e belongs to.
func (s *Stream) track(e history.Event) {
	switch e.Type {
	case history.Info:
		s.trackInfo(e)
	case history.Invoke:
		s.trackInvoke(e)
	default:
		s.trackDone(e)
	}
}

// trackInfo notes faults, harness stalls and crashes (which end the
// crashed process's holds).
func (s *Stream) trackInfo(e history.Event) {
	switch e.Op {
	case history.FaultStart, history.FaultHeal, history.FaultStep, history.MasterSwitch:
		s.faults = append(s.faults, e)
	case history.Stall:
		s.noteStall(e)
	case history.Crash:
		for _, l := range s.holds[e.Process] {
			s.letGo(l, e.Time)
			l.crash = e.Index
		}
		delete(s.holds, e.Process)
	}
}

// trackInvoke opens the operation; a release invoked by the holder ends
// its hold.
func (s *Stream) trackInvoke(e history.Event) {
	o := &opInfo{key: e.Key, call: e.Time, last: e.Time}
	s.ops[e.ID] = o
	acq := e.Op == history.Acquire || e.Op == history.NestedAcquire
	s.open[e.ID] = openOp{call: e.Time, key: e.Key, acquire: acq, claim: e.Op == history.Release || e.Op == history.Refresh}
	if acq {
		s.acqAt[e.Key] = max(s.acqAt[e.Key], e.Time)
	}
	if e.Op.IsLock() && e.Lease != "" {
		o.lease = s.heldAcquisition(e)
		if o.lease == nil {
			o.lease = s.lease(e.Key, e.Lease)
		}
		o.lease.ops = append(o.lease.ops, e.ID)
		o.lease.open++
		o.lease.last = e.Time
		o.lease.since = min(o.lease.since, e.Time)
		if (e.Op == history.Release || e.Op == history.NestedRelease && o.lease.nested) && o.lease.held && o.lease.process == e.Process {
			s.letGo(o.lease, e.Time)
			s.unhold(e.Process, o.lease)
		}
	}
}

// trackDone completes the operation and updates its lease: how long it
// may be alive, whether it is held, whether a release deleted it.
func (s *Stream) trackDone(e history.Event) {
	delete(s.open, e.ID)
	o := s.ops[e.ID]
	if o == nil {
		return // validated input never gets here
	}
	o.done, o.last = true, e.Time
	if e.Op == history.Acquire || e.Op == history.NestedAcquire {
		s.acqAt[e.Key] = max(s.acqAt[e.Key], e.Time)
		if e.Type == history.OK && s.cut != nil && (e.Op == history.Acquire || o.lease == nil || !history.SameOwner(o.lease.key.lease, e.Lease)) {
			s.cut.held(e.Key, e.Time)
		}
	}
	if e.Type == history.Unknown {
		for _, l := range s.holds[e.Process] {
			s.letGo(l, e.Time)
			l.ender = e.ID
		}
		delete(s.holds, e.Process)
	}
	if !e.Op.IsLock() {
		return
	}
	l := o.lease
	fresh := e.Op == history.NestedAcquire && e.Type != history.Fail && e.Lease != "" &&
		(l == nil || !history.SameOwner(l.key.lease, e.Lease))
	if fresh && l != nil {
		// A nested acquire that took the key under a token of its own
		// (as package checker's index reads it) is its lease's, not the
		// outer one's: it is kept, or not, with the release that deleted
		// it.
		l.open--
		l.ops = slices.DeleteFunc(l.ops, func(id int64) bool { return id == e.ID })
		l = nil
	}
	if l == nil && e.Lease != "" {
		// An acquire learns its lease when it returns.
		l = s.lease(e.Key, e.Lease)
		l.ops = append(l.ops, e.ID)
		l.open++
		l.since = min(l.since, o.call)
		o.lease = l
	}
	if l != nil {
		s.leaseDone(e, o, l, fresh)
	}
}

// leaseDone applies the completion e of a lock operation o to its lease
// l: how long the key may live, whether a release deleted it, and, for an
// ok acquire (or a fresh nested one), the hold that begins.
func (s *Stream) leaseDone(e history.Event, o *opInfo, l *leaseInfo, fresh bool) {
	l.open--
	l.last = max(l.last, e.Time)
	ttl := e.TTLMillis * 1e6
	deleted := e.Type == history.OK && e.Deleted != nil && *e.Deleted
	if e.Op == history.NestedRelease && !l.nested && ttl == 0 {
		ttl = l.ttl // its owner's nested release renews the key with the lease's ttl
	}
	switch {
	case !writes(e, l, deleted):
	case e.Type == history.Unknown && (e.Op == history.Acquire || fresh):
		// An acquire of unknown outcome may take effect late (a paused
		// server running what sat in its socket): keep it a while longer.
		reach, _, _ := s.sizes()
		l.until = max(l.until, sat64(e.Time, ttl+2*reach))
		l.unknown = append(l.unknown, unknownWrite{o.call, e.Time, ttl})
	case ttl <= 0:
		l.until = forever
	default:
		l.until = max(l.until, sat64(e.Time, ttl))
		if e.Type == history.Unknown {
			l.unknown = append(l.unknown, unknownWrite{o.call, e.Time, ttl})
		}
	}
	if e.Op == history.Acquire || e.Op == history.Refresh {
		s.maxTTL = max(s.maxTTL, ttl)
	}
	if (e.Op == history.Release || e.Op == history.NestedRelease) && deleted {
		l.gone = true
	}
	if e.Op == history.Release || e.Op == history.NestedRelease {
		if deleted || e.Type == history.Unknown {
			l.disturbAt = max(l.disturbAt, e.Time)
		}
	}
	if (e.Op == history.Acquire || fresh) && e.Type == history.OK {
		l.acquired, l.held, l.process, l.nested = true, true, e.Process, fresh
		l.ttl, l.disturbAt = ttl, max(l.disturbAt, e.Time)
		s.holds[e.Process] = append(s.holds[e.Process], l)
	}
}

// writes reports whether e, the completion of an operation of lease l, may
// have (re)written l's key, as package checker's lease-claims reads it: an
// acquire or nested acquire not refused, a refresh whatever it reported
// (a Redlock's renewal that missed its majority may have extended a
// minority of masters), the owner's nested release, while it holds l, that
// left the key in place (a reentrant lock renews the key on it).
func writes(e history.Event, l *leaseInfo, deleted bool) bool {
	switch e.Op {
	case history.Acquire, history.NestedAcquire:
		return e.Type != history.Fail
	case history.Refresh:
		return true
	case history.NestedRelease:
		return l.held && !l.nested && e.Type != history.Fail && !deleted
	}
	return false
}

// letGo ends l's hold at t. A lock that renews unseen kept renewing it
// until then, so it may be alive a TTL longer.
func (s *Stream) letGo(l *leaseInfo, t int64) {
	l.held = false
	if s.run != nil && s.run.RenewsUnseen {
		l.until = max(l.until, sat64(t, s.ttl()))
	}
}

// sat64 is t+d, or forever if that would pass it.
func sat64(t, d int64) int64 {
	if t > forever-d {
		return forever
	}
	return t + d
}

func (s *Stream) lease(key, id string) *leaseInfo {
	k := leaseKey{key, id}
	l := s.leases[k]
	if l == nil {
		l = &leaseInfo{key: k, crash: -1, since: forever, disturbAt: math.MinInt64}
		s.leases[k] = l
	}
	return l
}

// heldAcquisition returns the lease held by e's process on e's key that
// the invocation e belongs with. A release of the same acquisition
// (history.SameAcquisition) ends that hold and is kept with it, as
// package checker's index files it. A nested acquire or release of the
// same owner enters it again: kept with it, it goes when the hold is over,
// while under the owner's name, which the process keeps all its life,
// what is kept would grow with the run.
func (s *Stream) heldAcquisition(e history.Event) *leaseInfo {
	same := history.SameOwner
	switch e.Op {
	case history.Release:
		same = history.SameAcquisition
	case history.NestedAcquire, history.NestedRelease:
	default:
		return nil
	}
	for _, l := range s.holds[e.Process] {
		if l.key.key == e.Key && same(l.key.lease, e.Lease) {
			return l
		}
	}
	return nil
}

func (s *Stream) unhold(proc int, l *leaseInfo) {
	hs := s.holds[proc]
	for i, x := range hs {
		if x == l {
			hs = append(hs[:i], hs[i+1:]...)
			break
		}
	}
	if len(hs) == 0 {
		delete(s.holds, proc)
	} else {
		s.holds[proc] = hs
	}
}

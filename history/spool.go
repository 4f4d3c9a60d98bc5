package history

import (
	"io"
)

// A history file is written by one goroutine of its own, never under the
// recorder's lock: a write to a file can block for a long while (the
// kernel throttling a process that dirties pages faster than the disk
// takes them), and every client records under that lock, so a blocked
// write would stop the clients' clock, and with it leases, as a fault
// would. The recorder encodes each line into a buffer under its lock (the
// file's order is the clock's) and hands full buffers over.

// spoolChunk is the size at which a buffer is handed to the writer.
const spoolChunk = 256 << 10

// spoolDepth is how many full buffers may wait for the writer (4 MB):
// about half a second of a full-speed run; beyond it the recorder waits,
// so that a disk slower than the run slows the run rather than memory
// growing.
const spoolDepth = 16

// spool writes buffers to w in the order handed over, on its own
// goroutine.
type spool struct {
	cur  []byte
	full chan []byte
	free chan []byte
	done chan struct{}
	err  error // the first write error; read after done
}

func newSpool(w io.Writer) *spool {
	s := &spool{cur: make([]byte, 0, spoolChunk+4096), full: make(chan []byte, spoolDepth),
		free: make(chan []byte, spoolDepth+1), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for b := range s.full {
			if s.err == nil {
				_, s.err = w.Write(b)
			}
			select {
			case s.free <- b[:0]:
			default:
			}
		}
	}()
	return s
}

// add appends an encoded event; the caller holds the recorder's lock.
func (s *spool) add(e *Event) {
	s.cur = appendEvent(s.cur, e)
	if len(s.cur) >= spoolChunk {
		s.handOff()
	}
}

// handOff gives the writer what was added since the last hand-off.
func (s *spool) handOff() {
	if len(s.cur) == 0 {
		return
	}
	s.full <- s.cur
	select {
	case s.cur = <-s.free:
	default:
		s.cur = make([]byte, 0, spoolChunk+4096)
	}
}

// tryHandOff hands over what was added when no buffer waits for the
// writer: the periodic flush is for a writer with nothing to do (a quiet
// run's last moments reach the file), and must neither wait nor fill the
// queue with small buffers while the file is slow, which would make the
// recorder wait long before spoolDepth full ones.
func (s *spool) tryHandOff() {
	if len(s.cur) == 0 || len(s.full) > 0 {
		return
	}
	s.handOff()
}

// close hands over the rest, waits for the writer and returns its first
// error.
func (s *spool) close() error {
	s.handOff()
	close(s.full)
	<-s.done
	return s.err
}

package history

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// stuckWriter blocks every write until released, as a file does when the
// kernel throttles a writer.
type stuckWriter struct {
	release chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
	err     error
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	return w.buf.Write(p)
}

// TestRecorderWriteOffLock: a history file that stops taking writes does
// not stop the clients recording (up to the spool's depth), and every
// line reaches it, in order, once it takes them again; a write error is
// the recorder's Close error.
func TestRecorderWriteOffLock(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{{"blocked then released", nil}, {"failing", errors.New("disk full")}} {
		t.Run(tc.name, func(t *testing.T) {
			w := &stuckWriter{release: make(chan struct{}), err: tc.err}
			r := NewRecorder(w, &RunInfo{ID: "t", Lock: "t", Clients: 1, Keys: 1}, time.Millisecond)
			const n = 5000 // about 600 KB: several chunks, within the depth
			recorded := make(chan struct{})
			go func() {
				defer close(recorded)
				for i := range n {
					inv := r.Invoke(Event{Op: Acquire, Process: i, Client: i, Key: "k"})
					r.Complete(inv, OK, Event{Lease: "x"})
				}
			}()
			select {
			case <-recorded:
			case <-time.After(20 * time.Second):
				t.Fatal("recording waited for a blocked history file")
			}
			close(w.release)
			err := r.Close()
			if tc.err != nil {
				if err == nil || !strings.Contains(err.Error(), "disk full") {
					t.Fatalf("Close = %v, want the write error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(&w.buf)
			sc.Buffer(nil, 1<<20)
			lines, last := 0, int64(-1)
			for sc.Scan() {
				e, err := decodeLine(sc.Bytes())
				if err != nil {
					t.Fatalf("line %d: %v", lines+1, err)
				}
				if e.Index <= last && lines > 0 {
					t.Fatalf("line %d: index %d after %d", lines+1, e.Index, last)
				}
				last = e.Index
				lines++
			}
			if want := 1 + 2*n; lines != want {
				t.Fatalf("%d lines written, want %d", lines, want)
			}
		})
	}
}

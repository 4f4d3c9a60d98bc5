package history

import (
	"testing"
	"time"
)

// TestStartClock: the clock reads zero again at StartClock, so a lock
// program's start-up counts in no event's time, and no time goes back:
// once anything but the header is recorded the clock stays as it is.
func TestStartClock(t *testing.T) {
	r := NewRecorder(nil, &RunInfo{ID: "clock"}, time.Second)
	defer r.Close()
	time.Sleep(50 * time.Millisecond) // the clients' processes start
	if !r.StartClock() {
		t.Fatal("StartClock refused with only the header recorded")
	}
	if now := r.Now(); now >= 50*time.Millisecond {
		t.Errorf("the clock reads %v just after StartClock, want about zero", now)
	}
	if d := time.Since(r.Base()); d >= 50*time.Millisecond {
		t.Errorf("Base is %v ago, want about now", d)
	}
	first := r.Info(Event{Op: "probe"})
	if first.Time >= int64(50*time.Millisecond) {
		t.Errorf("the first event after StartClock is at %v", time.Duration(first.Time))
	}
	time.Sleep(10 * time.Millisecond)
	if r.StartClock() {
		t.Error("StartClock moved the clock after an event was recorded")
	}
	if second := r.Info(Event{Op: "probe"}); second.Time < first.Time+int64(10*time.Millisecond) {
		t.Errorf("times %d then %d: the clock moved back", first.Time, second.Time)
	}
}

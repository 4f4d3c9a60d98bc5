package workloads

import (
	"context"
	"testing"

	"github.com/locktorture/locktorture/locks"
)

// TestUnawaitedStepIsOnlyTold: a step whose command has gone out (a lock
// program's unawaited step) records its point, but a crash set for that
// point waits for the next step that can still stop its command, and a
// pause does not hold it; the gate says it is armed while either is set,
// so the program's next request awaits its go.
func TestUnawaitedStepIsOnlyTold(t *testing.T) {
	g := NewGate()
	if g.Armed() {
		t.Fatal("a fresh gate is armed")
	}
	g.CrashAt("attempt")
	if !g.Armed() {
		t.Fatal("a gate with a crash set is not armed")
	}
	un := locks.Unawaited(context.Background())
	if err := g.Step(un, "attempt"); err != nil {
		t.Fatalf("an unawaited step crashed: %v", err)
	}
	if got := g.Points(); len(got) != 1 || got[0] != "attempt" {
		t.Errorf("points %v, want attempt recorded", got)
	}
	if err := g.Step(context.Background(), "attempt"); err != ErrCrashed {
		t.Fatalf("the awaited step after it: %v, want the crash", err)
	}
	p := NewGate()
	p.Pause()
	if !p.Armed() {
		t.Fatal("a paused gate is not armed")
	}
	if err := p.Step(un, "release"); err != nil {
		t.Fatalf("an unawaited step of a paused process: %v", err)
	}
}

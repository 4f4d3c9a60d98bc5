package workloads

import (
	"context"
	"errors"
	"net"
	"testing"
	"testing/synctest"
	"time"
)

// TestGate: a pause holds every step and read until resume, a crash fails
// them from then on, and CrashAt lands exactly on the named point. Each case
// runs in a synctest bubble: "blocked" is synctest.Wait's word for it, not a
// sleep that is long enough on a quiet machine.
func TestGate(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		run  func(t *testing.T, g *Gate)
	}{
		{"pause blocks a step until resume", func(t *testing.T, g *Gate) {
			g.Pause()
			done := make(chan error, 1)
			go func() { done <- g.Step(ctx, "hold") }()
			synctest.Wait()
			select {
			case err := <-done:
				t.Fatalf("step returned %v during a pause", err)
			default:
			}
			g.Resume()
			if err := <-done; err != nil {
				t.Fatalf("step after resume: %v", err)
			}
		}},
		{"crash fails steps and releases a paused one", func(t *testing.T, g *Gate) {
			g.Pause()
			done := make(chan error, 1)
			go func() { done <- g.Step(ctx, "hold") }()
			synctest.Wait()
			g.Crash()
			if err := <-done; !errors.Is(err, ErrCrashed) {
				t.Fatalf("paused step after crash: %v", err)
			}
			if err := g.Step(ctx, "attempt"); !errors.Is(err, ErrCrashed) {
				t.Fatalf("step after crash: %v", err)
			}
		}},
		{"crash at a named point", func(t *testing.T, g *Gate) {
			for _, p := range []string{"attempt", "between-setnx-and-pexpire", "release"} {
				if err := g.Step(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			if got := g.Points(); len(got) != 3 || got[0] != "attempt" {
				t.Fatalf("points %v", got)
			}
			g.CrashAt("between-setnx-and-pexpire")
			if err := g.Step(ctx, "attempt"); err != nil {
				t.Fatalf("crashed at the wrong point: %v", err)
			}
			if err := g.Step(ctx, "between-setnx-and-pexpire"); !errors.Is(err, ErrCrashed) {
				t.Fatalf("no crash at the named point: %v", err)
			}
		}},
		{"a reply read during a pause is seen after it", func(t *testing.T, g *Gate) {
			a, b := net.Pipe()
			defer a.Close()
			defer b.Close()
			c := g.Conn(a)
			got := make(chan time.Time, 1)
			go func() {
				buf := make([]byte, 1)
				if _, err := c.Read(buf); err == nil {
					got <- time.Now()
				}
			}()
			synctest.Wait() // the read is waiting for the reply
			g.Pause()
			paused := time.Now()
			go func() { _, _ = b.Write([]byte{1}) }()
			time.Sleep(60 * time.Millisecond) // the bubble's clock: exact
			g.Resume()
			if at := <-got; at.Sub(paused) < 60*time.Millisecond {
				t.Fatalf("reply seen %v into a 60ms pause", at.Sub(paused))
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { tc.run(t, NewGate()) })
		})
	}
}

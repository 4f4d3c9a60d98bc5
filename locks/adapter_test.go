package locks

import (
	"math/rand"
	"testing"
	"time"
)

// The default pacing backs off from a millisecond to a twentieth of the TTL;
// a set RetryDelay is used every time. Attempts counts the attempts that fit
// in Wait at the mean jittered pace, also for waits far longer than the
// backoff.
func TestRetryPacing(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		delays   []time.Duration // base pauses after attempts 1, 2, ...
		attempts int
	}{
		{"default backoff", Config{TTL: time.Second, Wait: time.Second},
			// 1.25+2.5+5+10+20+40 ms, then 62.5 ms pauses: 14 more fit in the second.
			[]time.Duration{1, 2, 4, 8, 16, 32, 50, 50}, 21},
		{"fixed delay", Config{TTL: time.Second, Wait: time.Second, RetryDelay: 10 * time.Millisecond},
			[]time.Duration{10, 10, 10}, 81},
		{"no wait", Config{TTL: time.Second}, []time.Duration{1, 2}, 1},
		{"short TTL, long wait", Config{TTL: time.Millisecond, Wait: time.Hour}, []time.Duration{1, 1, 1}, 2_880_001},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i, want := range tc.delays {
				if got := tc.cfg.baseRetryDelay(i + 1); got != want*time.Millisecond {
					t.Errorf("pause after attempt %d: %v, want %v", i+1, got, want*time.Millisecond)
				}
			}
			tc.cfg.Rand = rand.New(rand.NewSource(1))
			for n := 1; n <= len(tc.delays); n++ {
				base := tc.cfg.baseRetryDelay(n)
				if d := tc.cfg.RetryDelayAt(n); d < base || d > base*3/2 {
					t.Errorf("jittered pause after attempt %d: %v, outside [%v, %v]", n, d, base, base*3/2)
				}
			}
			if got := tc.cfg.Attempts(); got != tc.attempts {
				t.Errorf("Attempts() = %d, want %d", got, tc.attempts)
			}
		})
	}
}

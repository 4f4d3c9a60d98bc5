package libs

import (
	"errors"
	"testing"

	"github.com/go-redsync/redsync/v4"
)

// A redsync release below its quorum is "deleted nothing" only when every
// node said so: one that deleted the key (it is absent from the error) or
// gave no answer leaves the outcome unknown. The errors are joined as
// redsync joins them, one node at a time.
func TestRedsyncReleaseRefusals(t *testing.T) {
	gone, taken := redsync.ErrLockAlreadyExpired, &redsync.ErrNodeTaken{Node: 1}
	silent := &redsync.RedisError{Node: 2, Err: errors.New("i/o timeout")}
	join := func(errs ...error) error {
		var err error
		for _, e := range errs {
			err = errors.Join(err, e)
		}
		return err
	}
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"every node gone or not ours", join(gone, taken, gone), 3},
		{"one node deleted it, two gone", join(gone, gone), 2},
		{"one node gave no answer", join(gone, silent, taken), 2},
		{"a lone refusal", taken, 1},
		{"no error", nil, 0},
	} {
		if got := refusals(tc.err); got != tc.want {
			t.Errorf("%s: %d refusals, want %d", tc.name, got, tc.want)
		}
	}
}

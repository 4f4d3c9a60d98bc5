package checker

import (
	"testing"

	"github.com/locktorture/locktorture/history"
)

// GenOverruns is a generated mutex history in which some holders work past
// their TTL, for the tests of package checker_test, which see this
// package as another module does.
func GenOverruns(t testing.TB, seed int64) *history.History {
	return genMutex(t, genOptions{clients: 4, ops: 300, ttl: 20, seed: seed, overrun: 0.2, unknown: 0.03})
}

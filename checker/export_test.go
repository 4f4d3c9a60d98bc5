package checker

import (
	"testing"

	"github.com/locktorture/locktorture/checker/internal/histgen"
	"github.com/locktorture/locktorture/history"
)

// GenOverruns is a generated mutex history in which some holders work past
// their TTL, for the tests of package checker_test, which see this
// package as another module does.
func GenOverruns(t testing.TB, seed int64) *history.History {
	return histgen.Mutex(t, histgen.MutexOptions{Clients: 4, Ops: 300, TTL: 20, Seed: seed, Overrun: 0.2, Unknown: 0.03})
}

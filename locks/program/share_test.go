package program_test

import (
	"context"
	"strings"
	"testing"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/cluster/clustertest"
)

// shared is short with clients 0,1 and 2,3 each sharing one program (one
// lock object per key, protocol version 2).
func shared(lock string, overrun float64) locktorture.Options {
	o := short(lock)
	o.Share, o.Overrun = 2, overrun
	return o
}

// TestShareRedisPy: redis-py's Lock shared by a program's threads keeps each
// thread's token apart (thread_local=True, its default) and holds; built
// with thread_local=False, one thread's late release deletes the lock
// another thread holds.
func TestShareRedisPy(t *testing.T) {
	needPython(t)
	runCases(t, []verdictCase{
		{"redis-py fault-free", shared("redis-py", 0), verdict{valid: true}},
		{"redis-py overrun", shared("redis-py", 0.2), verdict{want: checker.KindDoubleHolder, absent: checker.KindForeignRelease}},
		{"redis-py-shared-token overrun", shared("redis-py-shared-token", 0.3), verdict{want: checker.KindForeignRelease}},
	})
}

// TestShareExecToken: the reference program serves the clients that share
// its lock object at once (protocol version 2). The token lock keeps each
// acquire's token with its lease, so sharing the object costs it nothing:
// it holds fault-free, and under overrun a holder outlives its lease but
// never deletes another's lock.
func TestShareExecToken(t *testing.T) {
	runCases(t, []verdictCase{
		{"exec-token fault-free", shared("exec-token", 0), verdict{valid: true}},
		{"exec-token overrun", shared("exec-token", 0.3), verdict{want: checker.KindDoubleHolder, absent: checker.KindForeignRelease}},
	})
}

// TestShareNeedsVersion2: a program that speaks only version 1 under
// --share ends the run with one line naming it and the version it must
// speak.
func TestShareNeedsVersion2(t *testing.T) {
	clustertest.Need(t)
	o := shared("exec:sh testdata/await-every-go.sh", 0)
	o.OutDir = t.TempDir()
	_, err := locktorture.Run(context.Background(), o)
	if err == nil {
		t.Fatal("run passed, want an error")
	}
	msg := err.Error()
	for _, w := range []string{"literal", "protocol 1", "--share 2", "protocol 2"} {
		if !strings.Contains(msg, w) || strings.Contains(msg, "\n") {
			t.Errorf("error %q: want one line saying %q", msg, w)
		}
	}
	noneLeft(t)
}

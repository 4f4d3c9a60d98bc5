package checker
import ("context";"testing";"time")
func TestDbgStats(t *testing.T){
	for _, o := range []genOptions{
		{clients: 8, ops: 100000, ttl: 100, seed: 1, refresh: true, unknown: 0.01},
		{clients: 8, ops: 100000, ttl: 100, seed: 1, refresh: true, unknown: 0.05, overrun: 0.05},
		{clients: 8, ops: 20000, ttl: 100, seed: 1, refresh: true, unknown: 0.05, overrun: 0.05, violate: 0.001},
	} {
		h := genMutex(t, o)
		for _, seg := range []int{0, 1<<30} {
			t0 := time.Now()
			r := Linearizable(LinearizableOptions{SegmentOps: seg, Timeout: 60*time.Second}).Check(context.Background(), h)
			t.Logf("%+v seg=%d: %s %v %v %q %v", o, seg, r.Verdict, r.Stats, r.Count, r.Error, time.Since(t0))
			for _, a := range r.Anomalies { t.Logf("  %s", a.Detail) }
		}
	}
}

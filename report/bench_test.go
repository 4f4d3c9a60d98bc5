package report

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// genLong simulates a long mutex run of about ops operations: eight clients
// pass one key along (acquire, hold 0.5-2 ms, release) while another client
// fails to acquire; a fault every 50 000 holds, an unknown acquire every
// 10 000, and every 20 000 holds an overrun that the returned anomalies
// report as a double holder.
func genLong(tb testing.TB, ops int) (*history.History, []checker.Anomaly) {
	tb.Helper()
	rng := rand.New(rand.NewSource(1))
	const clients = 8
	evs := []history.Event{{Type: history.Info, Op: "run", Run: &history.RunInfo{ID: "long", Lock: "token", Workload: "mutex",
		Topology: "single", Clients: clients, Keys: 1, TTLMillis: 100, Seed: 1}}}
	var t, id int64
	proc := make([]int, clients)
	for c := range proc {
		proc[c] = c + 1
	}
	nextProc := clients + 1
	emit := func(e history.Event) {
		e.Index, e.Time, e.Key = int64(len(evs)), t, "lock:0"
		evs = append(evs, e)
	}
	opPair := func(c int, op history.Op, lease string, st history.Type, dt int64) {
		id++
		emit(history.Event{Type: history.Invoke, Op: op, ID: id, Process: proc[c], Client: c, TTLMillis: 100, Lease: leaseIf(op != history.Acquire, lease)})
		t += dt
		done := history.Event{Type: st, Op: op, ID: id, Process: proc[c], Client: c, TTLMillis: 100, Lease: leaseIf(st == history.OK, lease)}
		if op == history.Release && st == history.OK {
			done.Deleted = history.Bool(true)
		}
		emit(done)
	}
	var anomalies []checker.Anomaly
	for n, holds := 0, 0; n < ops; holds++ {
		c := holds % clients
		other := (c + 1 + rng.Intn(clients-1)) % clients
		lease := fmt.Sprintf("c%d-%d", c, holds)
		opPair(c, history.Acquire, lease, history.OK, 200e3)
		if holds%10_000 == 9_999 {
			opPair(other, history.Acquire, "", history.Unknown, 5e6)
			proc[other], nextProc = nextProc, nextProc+1
		} else {
			opPair(other, history.Acquire, "", history.Fail, 100e3)
		}
		if holds%50_000 == 25_000 {
			emit(history.Event{Type: history.Info, Op: history.FaultStart, Fault: "pause-client", Target: fmt.Sprintf("client %d", c)})
			t += 200e6
			emit(history.Event{Type: history.Info, Op: history.FaultHeal, Fault: "pause-client", Target: fmt.Sprintf("client %d", c)})
		}
		hold := 500e3 + rng.Int63n(1500e3)
		if holds%20_000 == 19_999 {
			hold = 150e6
			anomalies = append(anomalies, checker.Anomaly{Kind: checker.KindDoubleHolder, Class: checker.ClassLeaseOutlived,
				Clients: []int{c}, Keys: []string{"lock:0"}, Leases: []string{lease}, StartNS: t + 100e6, EndNS: t + hold, Detail: "overrun"})
		}
		t += hold
		opPair(c, history.Release, lease, history.OK, 100e3)
		n += 3
	}
	h, err := history.FromEvents(evs)
	if err != nil {
		tb.Fatalf("generated history: %v", err)
	}
	return h, anomalies
}

func leaseIf(ok bool, lease string) string {
	if ok {
		return lease
	}
	return ""
}

// writeHistory saves h as dir/history.jsonl, the way a run leaves it.
func writeHistory(tb testing.TB, dir string, h *history.History) {
	tb.Helper()
	f, err := os.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	if h.Run != nil {
		if err := enc.Encode(history.Event{Type: history.Info, Op: "run", Run: h.Run}); err != nil {
			tb.Fatal(err)
		}
	}
	for _, e := range h.Events {
		if err := enc.Encode(e); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkReport1M writes the report of a 1M-operation history read from
// disk, as `torture report` and the end of a run do, and reports its size:
// go test ./report -run '^$' -bench Report1M -benchmem -benchtime 3x
// (allocated bytes are the total of a report; the history is streamed, so
// its peak heap is far below: see -memprofile or /usr/bin/time -v).
func BenchmarkReport1M(b *testing.B) {
	h, as := genLong(b, 1_000_000)
	rep := longReport(as)
	dir := b.TempDir()
	writeHistory(b, dir, h)
	events := len(h.Events)
	h = nil
	runtime.GC()
	var size int64
	peak := heapPeak(b)
	for b.Loop() {
		path, err := Run(context.Background(), dir, WithReport(rep))
		if err != nil {
			b.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		size = st.Size()
	}
	b.ReportMetric(float64(size)/1e6, "MB/report")
	b.ReportMetric(float64(events), "events")
	b.ReportMetric(float64(peak())/1e6, "MB-heap-peak")
}

// heapPeak samples the heap in use every 20 ms until the returned function
// is called, which returns the largest sample: the report's peak, which the
// allocated bytes per op (a total) do not show.
func heapPeak(tb testing.TB) func() uint64 {
	done := make(chan struct{})
	res := make(chan uint64)
	go func() {
		var peak uint64
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-done:
				res <- peak
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	var peak uint64
	stop := func() uint64 {
		once.Do(func() { close(done); peak = <-res })
		return peak
	}
	tb.Cleanup(func() { stop() })
	return stop
}

// longReport is the checker's report of genLong's anomalies.
func longReport(as []checker.Anomaly) *checker.Report {
	return &checker.Report{Verdict: checker.Invalid, Anomalies: as, Count: map[checker.Kind]int{checker.KindDoubleHolder: len(as)}}
}

// reportOf writes the report page of the run folder dir and returns its
// path and content.
func reportOf(t *testing.T, dir string, opts ...Option) (string, []byte) {
	t.Helper()
	path, err := Run(context.Background(), dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, page
}

// TestReportFromDiskMatchesInMemory checks the streamed report (read from
// history.jsonl) is the page the in-memory history gives.
func TestReportFromDiskMatchesInMemory(t *testing.T) {
	h, as := genLong(t, 30_000)
	rep := longReport(as)
	disk, mem := t.TempDir(), t.TempDir()
	writeHistory(t, disk, h)
	_, a := reportOf(t, disk, WithReport(rep))
	_, b := reportOf(t, mem, WithHistory(h), WithReport(rep))
	if !bytes.Equal(a, b) {
		t.Errorf("report from disk (%d bytes) differs from the in-memory one (%d bytes)", len(a), len(b))
	}
	if !bytes.Contains(a, []byte("double-holder")) {
		t.Errorf("report shows no double-holder")
	}
}

// TestLongRunReportIsBounded checks the page of a long history stays small
// (by construction: overview columns, capped windows), on a 100k-operation
// history so the test stays quick; the benchmark measures 1M.
func TestLongRunReportIsBounded(t *testing.T) {
	h, as := genLong(t, 100_000)
	rep := longReport(as)
	path, page := reportOf(t, t.TempDir(), WithHistory(h), WithReport(rep))
	if len(page) > 4<<20 {
		t.Errorf("report of %d events is %d bytes, want at most 4 MB", len(h.Events), len(page))
	}
	if filepath.Base(path) != FileName {
		t.Errorf("wrote %s", path)
	}
}

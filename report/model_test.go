package report

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/summary"
)

func ms(v float64) int64 { return int64(v * 1e6) }

// hb writes a history by hand, one whole operation at a time.
type hb struct {
	t      *testing.T
	events []history.Event
	id     int64
}

type op struct {
	client, proc int
	op           history.Op
	lease        string
	ttl          int64 // ms
	call, ret    float64
	status       history.Type
	deleted      bool
}

func newHB(t *testing.T) *hb {
	return &hb{t: t, events: []history.Event{{Type: history.Info, Op: "run",
		Run: &history.RunInfo{ID: "hand", Lock: "set-px", Workload: "mutex", Topology: "single", Clients: 3, Keys: 1, TTLMillis: 100, Seed: 7,
			Params: map[string]string{"hold": "10ms..40ms", "overrun": "0.3", "nemesis": "pause-client", "redis_retries": "default"}}}}}
}

func (b *hb) add(o op) *hb {
	b.id++
	inv := history.Event{Time: ms(o.call), Type: history.Invoke, Op: o.op, ID: b.id, Process: o.proc, Client: o.client, Key: "lock:0", TTLMillis: o.ttl}
	if o.op != history.Acquire {
		inv.Lease = o.lease
	}
	done := inv
	done.Time, done.Type = ms(o.ret), o.status
	if o.op == history.Acquire && o.status == history.OK {
		done.Lease = o.lease
	}
	if o.op == history.Release && o.status == history.OK {
		done.Deleted = history.Bool(o.deleted)
	}
	b.events = append(b.events, inv, done)
	return b
}

func (b *hb) info(e history.Event) *hb { b.events = append(b.events, e); return b }

// build sorts the events by time (stable: invocations stay before their
// completions) and validates them as a history file would be.
func (b *hb) build() *history.History {
	b.t.Helper()
	evs := append([]history.Event(nil), b.events...)
	body := evs[1:]
	for i := 1; i < len(body); i++ {
		for j := i; j > 0 && body[j].Time < body[j-1].Time; j-- {
			body[j], body[j-1] = body[j-1], body[j]
		}
	}
	for i := range evs {
		evs[i].Index = int64(i)
	}
	h, err := history.FromEvents(evs)
	if err != nil {
		b.t.Fatalf("hand-written history: %v", err)
	}
	return h
}

// secondConfusion: client 0's work outlives its 100 ms lease, client 1 takes
// the lock, client 0's plain DEL removes it, client 2 walks in.
func secondConfusion(t *testing.T) *history.History {
	return newHB(t).
		add(op{client: 0, proc: 1, op: history.Acquire, lease: "a", ttl: 100, call: 0, ret: 1, status: history.OK}).
		info(history.Event{Time: ms(20), Type: history.Info, Op: history.FaultStart, Fault: "pause-client", Target: "client 0"}).
		info(history.Event{Time: ms(130), Type: history.Info, Op: history.FaultHeal, Fault: "pause-client", Target: "client 0"}).
		add(op{client: 1, proc: 2, op: history.Acquire, lease: "b", ttl: 100, call: 5, ret: 102, status: history.OK}).
		add(op{client: 0, proc: 1, op: history.Release, lease: "a", call: 140, ret: 141, status: history.OK, deleted: true}).
		add(op{client: 2, proc: 3, op: history.Acquire, lease: "c", ttl: 100, call: 120, ret: 142, status: history.OK}).
		add(op{client: 1, proc: 2, op: history.Release, lease: "b", call: 170, ret: 171, status: history.OK, deleted: false}).
		add(op{client: 2, proc: 3, op: history.Release, lease: "c", call: 180, ret: 181, status: history.OK, deleted: true}).
		build()
}

func TestModelLanesHoldsLeases(t *testing.T) {
	h := secondConfusion(t)
	m := buildModel(h, nil)
	if len(m.Keys) != 1 {
		t.Fatalf("keys: got %d, want 1", len(m.Keys))
	}
	km := m.Keys[0]
	tests := []struct {
		client             int
		from, to           float64
		leaseFrom, leaseTo float64
		acqLine, relLine   int
	}{
		// Client 0 holds from its acquire's return to its DEL, far past its
		// lease, which its DEL cannot end (client 1's lease had replaced it).
		{client: 0, from: 1, to: 140, leaseFrom: 0, leaseTo: 100},
		// Client 1's lease is cut short by client 0's DEL at 141 ms.
		{client: 1, from: 102, to: 170, leaseFrom: 5, leaseTo: 105},
		{client: 2, from: 142, to: 180, leaseFrom: 120, leaseTo: 181},
	}
	if len(km.Lanes) != 3 {
		t.Fatalf("lanes: got %d, want one per client (3)", len(km.Lanes))
	}
	for _, tt := range tests {
		l := km.Lanes[tt.client]
		if l.Client != tt.client || len(l.Holds) != 1 {
			t.Fatalf("lane %d: client %d with %d holds", tt.client, l.Client, len(l.Holds))
		}
		hd := l.Holds[0]
		if hd.From != ms(tt.from) || hd.To != ms(tt.to) || hd.LeaseFrom != ms(tt.leaseFrom) || hd.LeaseTo != ms(tt.leaseTo) {
			t.Errorf("client %d: hold %d..%d lease %d..%d, want %v..%v lease %v..%v ms", tt.client,
				hd.From, hd.To, hd.LeaseFrom, hd.LeaseTo, tt.from, tt.to, tt.leaseFrom, tt.leaseTo)
		}
		if hd.AcquireLine == 0 || hd.ReleaseLine == 0 {
			t.Errorf("client %d: history lines %d, %d", tt.client, hd.AcquireLine, hd.ReleaseLine)
		}
	}
	// Lines are 1-based and count the header: check one against the file.
	l0 := km.Lanes[0].Holds[0]
	if e := h.Events[l0.AcquireLine-2]; e.Type != history.OK || e.Op != history.Acquire || e.Client != 0 {
		t.Errorf("acquire line %d is %v", l0.AcquireLine, e)
	}
	if e := h.Events[l0.ReleaseLine-2]; e.Type != history.Invoke || e.Op != history.Release || e.Client != 0 {
		t.Errorf("release line %d is %v", l0.ReleaseLine, e)
	}
	if len(m.Faults) != 1 || m.Faults[0].Start != ms(20) || m.Faults[0].End != ms(130) {
		t.Errorf("fault bands: %+v", m.Faults)
	}
}

func TestSubLanesAfterUnknownOutcome(t *testing.T) {
	// Process 1 of client 0 gives up on an acquire (unknown); client 0 goes
	// on as process 4, which acquires and holds while the refresh the
	// watchdog (process 1's lease) sent is still in the air: two processes
	// of one client hold at once and need two sub-lanes.
	h := newHB(t).
		add(op{client: 0, proc: 1, op: history.Acquire, lease: "x", ttl: 100, call: 0, ret: 2, status: history.OK}).
		add(op{client: 0, proc: 1, op: history.Release, lease: "x", call: 60, ret: 90, status: history.Unknown}).
		add(op{client: 0, proc: 4, op: history.Acquire, lease: "y", ttl: 100, call: 10, ret: 20, status: history.OK}).
		add(op{client: 0, proc: 4, op: history.Release, lease: "y", call: 50, ret: 51, status: history.OK, deleted: true}).
		add(op{client: 1, proc: 2, op: history.Acquire, lease: "", ttl: 100, call: 3, ret: 5, status: history.Fail}).
		build()
	m := buildModel(h, nil)
	km := m.Keys[0]
	var subs []string
	for _, l := range km.Lanes {
		subs = append(subs, laneLabel(l))
	}
	want := []string{"client 0", "client 0 · p4", "client 1", "client 2"}
	if strings.Join(subs, "|") != strings.Join(want, "|") {
		t.Fatalf("lanes %q, want %q", subs, want)
	}
	if n := len(km.Lanes[0].Marks); n != 1 || km.Lanes[0].Marks[0].Op != history.Release {
		t.Errorf("unknown release marks on lane 0: %+v", km.Lanes[0].Marks)
	}
}

func TestAnomalyPlacementAndWindows(t *testing.T) {
	h := secondConfusion(t)
	as := []checker.Anomaly{
		{Kind: checker.KindForeignRelease, Clients: []int{0, 1}, Processes: []int{1, 2}, Keys: []string{"lock:0"}, Leases: []string{"a", "b"},
			StartNS: ms(140), EndNS: ms(141), Detail: "client 0 deleted client 1's lock"},
		{Kind: checker.KindDoubleHolder, Class: checker.ClassLeaseOutlived, Clients: []int{0, 1}, Processes: []int{1, 2}, Keys: []string{"lock:0"},
			Leases: []string{"a", "b"}, StartNS: ms(102), EndNS: ms(140), Detail: "overlap"},
		// Untrusted input: an unknown key and times past the end.
		{Kind: checker.KindStuckLock, Keys: []string{"nope"}, Processes: []int{3}, StartNS: -5, EndNS: ms(9999), Detail: "stuck"},
	}
	m := buildModel(h, as)
	tests := []struct {
		n     int
		kind  checker.Kind
		lines int
	}{
		{1, checker.KindStuckLock, 2}, // starts at 0 after clipping: process 3's acquire and release
		{2, checker.KindDoubleHolder, 4},
		{3, checker.KindForeignRelease, 4},
	}
	for _, tt := range tests {
		a := m.Anomalies[tt.n-1]
		if a.N != tt.n || a.Kind != tt.kind || a.Key != "lock:0" || len(a.Lines) != tt.lines {
			t.Errorf("anomaly %d: %+v, want kind %s on lock:0 with %d lines", tt.n, a, tt.kind, tt.lines)
		}
		if a.StartNS < 0 || a.EndNS > m.End || a.EndNS < a.StartNS {
			t.Errorf("anomaly %d: times %d..%d not clipped to the history", tt.n, a.StartNS, a.EndNS)
		}
	}
	ws := m.windows(m.Keys[0])
	for _, n := range []int{1, 2, 3} {
		if windowOf(ws, n) == nil {
			t.Errorf("anomaly %d has no detail window", n)
		}
	}
	w := windowOf(ws, 2)
	svg := detailSVG(m, m.Keys[0], *w)
	for _, want := range []string{`id="t-anomaly-2"`, `class="fault-band"`, `class="outlived"`, `href="#anomaly-2"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("detail window lacks %s", want)
		}
	}
	over := overviewSVG(m, m.Keys[0], ws)
	if !strings.Contains(over, `href="#t-anomaly-3"`) || !strings.Contains(over, `href="#`+w.ID+`"`) {
		t.Errorf("overview does not link to the anomaly and its window")
	}
}

func TestReplayCommand(t *testing.T) {
	h := secondConfusion(t)
	got := ReplayCommand(h.Run)
	want := "torture run --lock set-px --workload mutex --topology single --clients 3 --keys 1 --ttl 100ms --seed 7 --faults pause-client --hold 10ms..40ms --overrun 0.3"
	if got != want {
		t.Errorf("replay:\n got %s\nwant %s", got, want)
	}
	r := *h.Run
	r.Params = map[string]string{"nemesis": "a b; rm -rf /"}
	if got := ReplayCommand(&r); !strings.HasSuffix(got, `--faults 'a b; rm -rf /'`) {
		t.Errorf("unquoted parameter: %s", got)
	}
	// A lock program replays by its lock setting; its own name is no flag,
	// and an older exec: header, which kept only that name, replays not.
	for _, tc := range []struct {
		lock, program string
		params        map[string]string
		want          string
	}{
		{"exec:A=1 ./it's", "it 1", nil, `torture run --lock 'exec:A=1 ./it'\''s' --clients 3`},
		{"redis-py", "", map[string]string{"lock_program": "redis-py 4.3.4"}, "torture run --lock redis-py --clients 3"},
		{"it 1", "", map[string]string{"lock_program": "it 1"}, ""},
	} {
		r := history.RunInfo{Lock: tc.lock, Program: tc.program, Clients: 3, Keys: 1, TTLMillis: 100, Params: tc.params}
		got := ReplayCommand(&r)
		if !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") || strings.Contains(got, "program") {
			t.Errorf("%s: replay %q, want it to begin %q", tc.lock, got, tc.want)
		}
	}
}

// A guarded resource may name a new key for ever (a flash sale's stock key
// each sale): the model keeps only the keys the page may draw (the lock
// keys, those anomalies name, the first few others by name) and counts the
// rest, exactly up to maxCountedKeys and "over" past it.
func TestModelKeepsOnlyDrawableKeys(t *testing.T) {
	sales := func(n int) *history.History {
		b := newHB(t).add(op{client: 0, proc: 1, op: history.Acquire, lease: "a", ttl: 100, call: 0, ret: 1, status: history.OK})
		for i := range n {
			at := ms(2 + float64(i)*0.001)
			key := fmt.Sprintf("sale:%05d:stock", n-i) // named in reverse: the first by name come last
			b.info(history.Event{Time: at, Type: history.Invoke, Op: history.Buy, ID: int64(10 + 2*i), Process: 2, Client: 1, Key: key, Value: history.Int64(1)})
			b.info(history.Event{Time: at, Type: history.OK, Op: history.Buy, ID: int64(10 + 2*i), Process: 2, Client: 1, Key: key})
		}
		return b.build()
	}
	anomalies := []checker.Anomaly{{Kind: checker.KindOversell, Clients: []int{1}, Keys: []string{"sale:01000:stock"}, StartNS: ms(2), EndNS: ms(3)}}
	tests := []struct {
		name   string
		n      int
		hidden int
		over   bool
	}{
		{"counted", 2000, 2000 - maxKeysShown - 1, false},
		{"past the count", maxCountedKeys + 50, maxCountedKeys, true}, // the drawn keys come last, past the count,
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := builderOf(sales(tt.n), anomalies)
			m := b.finish()
			var names []string
			for _, km := range m.Keys {
				names = append(names, km.Key)
			}
			want := []string{"lock:0", "sale:00001:stock", "sale:00002:stock", "sale:00003:stock", "sale:00004:stock",
				"sale:00005:stock", "sale:00006:stock", "sale:01000:stock"}
			if !slices.Equal(names, want) {
				t.Errorf("keys %v, want %v", names, want)
			}
			if m.HiddenKeys != tt.hidden || m.HiddenOver != tt.over {
				t.Errorf("hidden %d (over %v), want %d (over %v)", m.HiddenKeys, m.HiddenOver, tt.hidden, tt.over)
			}
			pg, err := buildPage(m, b.series, &summary.Summary{}, "")
			if err != nil {
				t.Fatal(err)
			}
			if shown := len(pg.Keys); shown != maxKeysShown || pg.HiddenKeys != tt.hidden+len(want)-maxKeysShown {
				t.Errorf("page draws %d keys and hides %d, want %d and %d", shown, pg.HiddenKeys, maxKeysShown, tt.hidden+len(want)-maxKeysShown)
			}
			if pg.Keys[0].Key != "sale:01000:stock" {
				t.Errorf("the anomaly's key is not drawn first: %s", pg.Keys[0].Key)
			}
		})
	}
}

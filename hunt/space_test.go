package hunt

import (
	"context"
	"errors"
	"math/rand"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/locks"
	"github.com/locktorture/locktorture/nemesis"
	"github.com/locktorture/locktorture/settings"
)

func TestResolve(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0.5ttl", "150ms"},
		{"1.5ttl..2.5ttl", "450ms..750ms"},
		{"3ttl", "900ms"},
		{"3ttl..4ttl", "900ms..1.2s"},
		{"0.02ttl..0.1ttl", "6ms..30ms"},
		{"0.0001ttl", "1ms"},
		{"20ms", "20ms"},
		{"true", "true"},
	} {
		if got := Resolve(tc.in, 300*time.Millisecond); got != tc.want {
			t.Errorf("Resolve(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// outsideFault is a fault registered from outside with a knob of its own
// and no search values: the hunt must search it anyway.
func outsideFault() nemesis.Entry {
	return nemesis.Entry{Name: "outside-stall", Summary: "a fault of someone else's",
		New:        func(nemesis.Options) nemesis.Fault { return nil },
		Topologies: []string{"sentinel"},
		Settings: []settings.Setting{{Name: "stall-for", Kind: settings.Duration, Help: "how long"},
			{Name: "stall-mode", Kind: settings.String, Choices: []string{"soft", "hard"}, Help: "how"},
			{Name: "stall-note", Kind: settings.String, Help: "free text: not searched"}}}
}

// TestSpaceFromDeclarations: the topologies, the faults acting on each and
// every setting's values come from what the registries declare, an
// outside fault's among them, with nothing listed by hand.
func TestSpaceFromDeclarations(t *testing.T) {
	regs := locktorture.Builtin()
	if err := regs.Faults.Register(outsideFault()); err != nil {
		t.Fatal(err)
	}
	sp, err := NewSpace(regs, "token", SpaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sp.Topologies[0] != locktorture.DefaultOptions().Topology {
		t.Errorf("topologies %v: the default one should come first", sp.Topologies)
	}
	for _, e := range regs.Faults.Entries() {
		for _, top := range sp.Topologies {
			in := slices.Contains(sp.Faults[top], e.Name)
			if want := e.Serves(top) == nil; in != want {
				t.Errorf("fault %s on %s: in the space %v, its entry serves it %v", e.Name, top, in, want)
			}
		}
	}
	dims := map[string][]string{}
	for _, d := range sp.FaultDims["outside-stall"] {
		dims[d.Name()] = d.Values
	}
	if got := dims["stall-for"]; len(got) < 3 || got[0] != "" {
		t.Errorf("stall-for searched over %v; want its default and multiples of the TTL", got)
	}
	if got := dims["stall-mode"]; !reflect.DeepEqual(got, []string{"", "soft", "hard"}) {
		t.Errorf("stall-mode searched over %v", got)
	}
	if _, ok := dims["stall-note"]; ok {
		t.Error("a free-text setting is searched")
	}
	load := map[string]bool{}
	for _, d := range sp.Load {
		load[d.Name()] = true
		if err := checkValues(d); err != nil {
			t.Error(err)
		}
	}
	for _, name := range []string{"clients", "share", "keys", "ttl", "hold", "overrun", "think", "wait", "retry-delay", "workload", "nemesis-interval", "target", "trigger", "persistence"} {
		if !load[name] {
			t.Errorf("run setting %s is not in the hunt's load", name)
		}
	}
	for _, name := range []string{"lock", "topology", "faults", "seed", "duration", "out", "backend"} {
		if load[name] {
			t.Errorf("run setting %s is searched", name)
		}
	}
}

func TestSpaceNarrowed(t *testing.T) {
	regs := locktorture.Builtin()
	sp, err := NewSpace(regs, "token", SpaceOptions{Topologies: []string{"single"}, Faults: []string{"none"},
		Fixed: map[string]string{"ttl": "1s", "clients": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sp.Topologies, []string{"single"}) || len(sp.Faults["single"]) != 0 {
		t.Errorf("topologies %v faults %v; want single without faults", sp.Topologies, sp.Faults)
	}
	c := Candidate{Topology: "single", Values: map[string]string{"hold": "1.5ttl..2.5ttl"}}
	set := sp.Settings(&c)
	if set["ttl"] != "1s" || set["clients"] != "2" || set["hold"] != "1.5s..2.5s" {
		t.Errorf("settings %v: want the fixed ones, and the hold as multiples of the fixed TTL", set)
	}
	for _, bad := range []SpaceOptions{
		{Fixed: map[string]string{"no-such-setting": "1"}},
		{Fixed: map[string]string{"ttl": "soon"}},
		{Topologies: []string{"moon"}},
		{Faults: []string{"meteor"}},
	} {
		if _, err := NewSpace(regs, "token", bad); err == nil {
			t.Errorf("NewSpace(%+v) took it", bad)
		}
	}
}

// TestCandidateCommand: a candidate's command line is torture run's own,
// and its options are what that command would run.
func TestCandidateCommand(t *testing.T) {
	regs := locktorture.Builtin()
	sp, err := NewSpace(regs, "token", SpaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := Candidate{Topology: "single", Faults: []string{"latency"}, Seed: 7,
		Values: map[string]string{"latency-all": "true", "overrun": "0.2", "ttl": "1s", "latency": "0.5ttl", "downtime": "1s"}}
	sp.normalize(&c)
	if _, ok := c.Values["downtime"]; ok {
		t.Error("a setting of a fault the candidate does not inject was kept")
	}
	o, err := sp.Options(&c, regs, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if o.TTL != time.Second || o.Overrun != 0.2 || o.Settings.Duration("latency") != 500*time.Millisecond || !o.Settings.Bool("latency-all") {
		t.Errorf("options %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Error(err)
	}
	args := sp.Args(&c, 4*time.Second)
	for _, want := range []string{"--latency-all=true", "--latency=500ms", "--faults", "--seed"} {
		if !slices.Contains(args, want) {
			t.Errorf("args %v lack %s", args, want)
		}
	}
}

func TestHazard(t *testing.T) {
	outlived := checker.Anomaly{Kind: checker.KindDoubleHolder, Class: checker.ClassLeaseOutlived}
	within := checker.Anomaly{Kind: checker.KindDoubleHolder, Class: checker.ClassWithinLease}
	lost := checker.Anomaly{Kind: checker.KindLostUpdate}
	onlyOutlived := &checker.Report{Count: map[checker.Kind]int{checker.KindDoubleHolder: 2},
		Classes: checker.ClassCounts{checker.KindDoubleHolder: {checker.ClassLeaseOutlived: 2}}}
	alsoWithin := &checker.Report{Count: map[checker.Kind]int{checker.KindDoubleHolder: 2},
		Classes: checker.ClassCounts{checker.KindDoubleHolder: {checker.ClassLeaseOutlived: 1, checker.ClassWithinLease: 1}}}
	for _, tc := range []struct {
		name string
		a    checker.Anomaly
		rep  *checker.Report
		want bool
	}{
		{"lease-outlived", outlived, onlyOutlived, true},
		{"within-lease", within, alsoWithin, false},
		{"lost update beside lease-outlived only", lost, onlyOutlived, true},
		{"lost update beside a within-lease", lost, alsoWithin, false},
		{"foreign release", checker.Anomaly{Kind: checker.KindForeignRelease}, onlyOutlived, false},
		{"lost update with no double holder", lost, &checker.Report{}, false},
	} {
		if got := hazard(tc.a, tc.rep); got != tc.want {
			t.Errorf("%s: hazard %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestShape(t *testing.T) {
	a := shape("c3 (paused holding lock:1 until 450ms past its lease)")
	b := shape("c0 (paused holding lock:12 until 1.2s past its lease)")
	if a != b || a != "c# (paused holding lock:# until # past its lease)" {
		t.Errorf("shapes %q and %q", a, b)
	}
}

// draws lists the first n candidates a strategy draws, told nothing of
// their runs but that they ran.
func draws(t *testing.T, name string, seed int64, n int) []string {
	t.Helper()
	sp, err := NewSpace(locktorture.Builtin(), "token", SpaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := NewStrategy(name, sp, seed)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := range n {
		c, how, _ := st.Next()
		out = append(out, how+" "+c.key())
		st.Observe(&Trial{N: i, Candidate: c})
	}
	return out
}

// TestStrategiesReproducible: the same seed draws the same candidates;
// another seed others. The feedback strategy begins with the sweep: the
// base run on every topology, then faults at their defaults.
func TestStrategiesReproducible(t *testing.T) {
	for _, name := range Strategies {
		a, b, c := draws(t, name, 1, 60), draws(t, name, 1, 60), draws(t, name, 2, 60)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: seed 1 twice drew different candidates", name)
		}
		if reflect.DeepEqual(a, c) {
			t.Errorf("%s: seeds 1 and 2 drew the same candidates", name)
		}
	}
	fb := draws(t, StrategyFeedback, 1, 30)
	if fb[0] != "sweep single|" {
		t.Errorf("the feedback strategy began with %q; want the base run on the default topology", fb[0])
	}
	sweeps := 0
	for _, d := range fb {
		if d[:5] == "sweep" {
			sweeps++
		}
	}
	if sweeps < 8 {
		t.Errorf("%d sweep runs in the first 30: %v", sweeps, fb)
	}
}

// TestRandomCoversTheSpace: the random strategy reaches every topology,
// every fault and every value of the load within a few hundred draws.
func TestRandomCoversTheSpace(t *testing.T) {
	sp, err := NewSpace(locktorture.Builtin(), "token", SpaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := &random{sp: sp, rng: rand.New(rand.NewSource(3))}
	seen := map[string]bool{}
	for range 3000 {
		c, _, _ := st.Next()
		seen["topology "+c.Topology] = true
		for _, f := range c.Faults {
			seen["fault "+f] = true
		}
		for k, v := range c.Values {
			seen[k+"="+v] = true
		}
	}
	for _, top := range sp.Topologies {
		for _, f := range sp.Faults[top] {
			if !seen["fault "+f] {
				t.Errorf("fault %s never drawn", f)
			}
		}
	}
	for _, d := range sp.Load {
		for _, v := range d.Values[1:] {
			if !seen[d.Name()+"="+v] {
				t.Errorf("%s=%s never drawn", d.Name(), v)
			}
		}
	}
}

// TestHuntStopsAtMaxTrials: a hunt bounded in runs by a run function that
// refuses everything says so in one error rather than spinning.
func TestHuntRefusedEverything(t *testing.T) {
	refuse := func(context.Context, locktorture.Options) (*locktorture.Result, error) {
		return nil, &locktorture.UsageError{Err: errTest}
	}
	_, err := Hunt(context.Background(), Options{Lock: "token", Budget: time.Minute, Run: refuse, OutDir: t.TempDir(),
		MinRun: 100 * time.Millisecond, MaxRun: 100 * time.Millisecond})
	if err == nil {
		t.Fatal("a hunt whose every candidate was refused succeeded")
	}
}

var errTest = errTestT("the plan refuses it")

type errTestT string

func (e errTestT) Error() string { return string(e) }

// TestPlanRefusesWhatDoesNotApply: a run asked for a fault on a topology
// its entry does not act on, or for a lock on a topology it does not
// serve, is refused before any server starts, with errors the hunt tells
// apart from others.
func TestPlanRefusesWhatDoesNotApply(t *testing.T) {
	o := locktorture.DefaultOptions()
	o.Faults = []string{"failover"}
	err := o.Validate()
	if !errors.Is(err, nemesis.ErrUnavailable) || !locktorture.IsUsage(err) {
		t.Errorf("failover on single: %v", err)
	}
	o = locktorture.DefaultOptions()
	o.Lock, o.Topology = "node-redis", "sentinel"
	if err := o.Validate(); !errors.Is(err, locks.ErrNotServed) {
		t.Errorf("node-redis on sentinel: %v", err)
	}
}

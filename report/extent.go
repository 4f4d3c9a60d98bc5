package report

import (
	"hash/fnv"
	"math"
	"slices"
	"sort"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// A report is built in two passes over the history, so that its memory does
// not grow with the length of the run. The first (extent) learns what the
// page's layout depends on: the end of the history, how many holds each key
// has, and where the detail windows can fall (around the anomalies, which
// are known before, and the faults). The second (modelBuilder) then keeps a
// hold only where the page draws it one by one: every hold of a key with few
// enough for the overview to draw them all, else those inside a stretch a
// detail window may cover and those an anomaly names. Every other hold of a
// busy key goes into its lane's overview columns and is forgotten.

// extent is what the first pass learns.
type extent struct {
	end int64
	// holds counts the ok acquires of each key the page may draw: every
	// key of a lock operation or of an anomaly, and the first few of the
	// others by name (see extentScanner).
	holds map[string]int
	// hidden counts the other keys, which the page never draws; over: at
	// least that many (the count stopped at maxCountedKeys).
	hidden int
	over   bool
	// regions are, for each busy key, the spans whose holds are kept.
	regions map[string][]span
	named   map[string]bool // leases an anomaly names
}

// span is a stretch of the history's clock, ends included.
type span struct{ from, to int64 }

// extentScanner is the first pass, one event at a time.
//
// The page draws the keys anomalies name, then the others by name, up to
// maxKeysShown. A run's lock keys are as many as it was given, but a
// guarded resource may name a new key for ever (each flash sale has its
// own stock key): so the scanner keeps every key of a lock operation or
// an anomaly, only the first maxKeysShown of the other keys by name, and
// counts the rest, so that its memory does not grow with the run.
type extentScanner struct {
	end   int64
	holds map[string]int
	// anomalous are the keys the anomalies name.
	anomalous map[string]bool
	// first are the smallest names of the other keys, sorted; others
	// the hashes of every other key, up to maxCountedKeys of them.
	first  []string
	others map[uint64]bool
	infos  []history.Event
}

// maxCountedKeys bounds the keys counted one by one past the drawn ones.
const maxCountedKeys = 1 << 16

func newExtentScanner(anomalies []checker.Anomaly) *extentScanner {
	x := &extentScanner{holds: map[string]int{}, anomalous: map[string]bool{}, others: map[uint64]bool{}}
	for _, a := range anomalies {
		for _, k := range a.Keys {
			x.anomalous[k] = true
		}
	}
	return x
}

func (x *extentScanner) add(e history.Event) {
	x.end = e.Time
	switch {
	case e.Type == history.Invoke && e.Key != "":
		if _, ok := x.holds[e.Key]; ok {
			break
		}
		if e.Op.IsLock() || x.anomalous[e.Key] {
			x.holds[e.Key] = 0
			break
		}
		x.other(e.Key)
	case e.Type == history.OK && e.Op == history.Acquire:
		x.holds[e.Key]++
	case e.Type == history.Info && (e.Op == history.FaultStart || e.Op == history.FaultHeal):
		x.infos = append(x.infos, e)
	}
}

// other notes a key only a resource operation names: among the first by
// name, and counted.
func (x *extentScanner) other(key string) {
	if len(x.others) < maxCountedKeys {
		x.others[keyHash(key)] = true
	}
	i, found := slices.BinarySearch(x.first, key)
	if found || i >= maxKeysShown {
		return
	}
	x.first = slices.Insert(x.first, i, key)
	if len(x.first) > maxKeysShown {
		x.first = x.first[:maxKeysShown]
	}
}

func keyHash(key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return h.Sum64()
}

// finish places the detail windows' stretches on the busy keys: ttl is the
// run's (the windows' padding), anomalies those the page will list.
func (x *extentScanner) finish(ttl int64, anomalies []checker.Anomaly) *extent {
	for _, k := range x.first {
		if _, ok := x.holds[k]; !ok {
			x.holds[k] = 0
		}
	}
	ext := &extent{end: x.end, holds: x.holds, regions: map[string][]span{}, named: map[string]bool{}}
	ext.hidden, ext.over = len(x.others), len(x.others) == maxCountedKeys
	for k := range x.holds {
		if x.others[keyHash(k)] {
			ext.hidden-- // drawn after all
		}
	}
	for _, a := range anomalies {
		for _, l := range a.Leases {
			ext.named[l] = true
		}
	}
	pad := ttl
	if pad <= 0 {
		pad = x.end / 20
	}
	// A window reaches at most pad before and after its anomaly or fault
	// (narrowing only shrinks it) and counts holds from pad before that:
	// two pads either side cover it.
	stretch := func(start, end int64) span {
		return span{start - 2*pad, min(end, sat(start, 10*pad)) + 2*pad}
	}
	keys := make([]string, 0, len(x.holds))
	for k := range x.holds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var faults []span
	for i, f := range history.FaultWindows(x.infos, x.end) {
		if i == maxFaultWindows {
			break
		}
		faults = append(faults, stretch(f.Start, f.End))
	}
	sorted := append([]checker.Anomaly(nil), anomalies...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].StartNS < sorted[j].StartNS })
	perKey := map[string]int{}
	for _, a := range sorted {
		k := anomalyKey(a, x.holds, keys)
		if k == "" || perKey[k] == maxAnomalyWindows {
			continue
		}
		perKey[k]++
		start := clamp(a.StartNS, 0, x.end)
		ext.regions[k] = append(ext.regions[k], stretch(start, clamp(a.EndNS, start, x.end)))
	}
	for _, k := range keys {
		if ext.busy(k) {
			ext.regions[k] = append(ext.regions[k], faults...)
		} else {
			delete(ext.regions, k)
		}
	}
	return ext
}

// anomalyKey is the key whose timeline shows a, as placeAnomalies decides.
func anomalyKey(a checker.Anomaly, known map[string]int, sorted []string) string {
	for _, k := range a.Keys {
		if _, ok := known[k]; ok {
			return k
		}
	}
	if len(sorted) > 0 {
		return sorted[0]
	}
	return ""
}

func sat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// busy reports whether key has too many holds to draw each in the overview.
func (x *extent) busy(key string) bool { return x != nil && x.holds[key] > maxExactOverview }

// keep reports whether a finished hold of a busy key is drawn one by one.
func (x *extent) keep(hd *hold) bool {
	if hd.Lease != "" && x.named[hd.Lease] {
		return true
	}
	lo, hi := min(hd.From, hd.LeaseFrom), max(hd.To, hd.LeaseTo)
	for _, r := range x.regions[hd.Key] {
		if lo <= r.to && hi >= r.from {
			return true
		}
	}
	return false
}

// busyClient lays out one client's holds of a busy key as they come: a hold
// goes to the first sub-lane whose last hold ended before it began (as
// packLanes does with every hold at hand), and adds its time to that lane's
// overview columns when it ends.
type busyClient struct {
	occ   []*hold // each sub-lane's latest hold
	lanes []*lane
	subOf map[int]int // process → sub-lane
}

// place gives hd its sub-lane.
func (c *busyClient) place(client int, hd *hold) {
	s := -1
	for i, o := range c.occ {
		if o.To != toEnd && o.To <= hd.From {
			s = i
			break
		}
	}
	if s < 0 {
		s = len(c.occ)
		c.occ = append(c.occ, nil)
		c.lanes = append(c.lanes, &lane{Client: client, Sub: s, cover: make([]float64, overviewBuckets)})
	}
	c.occ[s] = hd
	hd.sub = s
	if _, ok := c.subOf[hd.Process]; !ok {
		c.subOf[hd.Process] = s
		c.lanes[s].Processes = append(c.lanes[s].Processes, hd.Process)
	}
}

// done files a hold whose end is known: into its lane's columns, and into
// the lane itself when the page draws it.
func (c *busyClient) done(hd *hold, ext *extent) {
	l := c.lanes[hd.sub]
	addCover(l.cover, hd.From, hd.To, max(ext.end, 1))
	if ext.keep(hd) {
		l.Holds = append(l.Holds, *hd)
	}
}

// addCover adds the share of each overview column that [from, to] covers,
// the columns spanning [0, end].
func addCover(cover []float64, from, to, end int64) {
	bw := float64(end) / overviewBuckets
	for c := max(0, int(float64(from)/bw)); c < overviewBuckets && float64(c)*bw < float64(to); c++ {
		lo := math.Max(float64(from), float64(c)*bw)
		hi := math.Min(float64(to), float64(c+1)*bw)
		cover[c] += (hi - lo) / bw
	}
}

// finish returns the client's lanes, each one's holds in time order, with
// the unknown outcomes of its processes.
func (c *busyClient) finish(client int, marks []mark) []*lane {
	if len(c.lanes) == 0 {
		c.lanes = []*lane{{Client: client, cover: make([]float64, overviewBuckets)}}
	}
	for _, l := range c.lanes {
		sort.Slice(l.Holds, func(i, j int) bool { return l.Holds[i].From < l.Holds[j].From })
	}
	for _, mk := range marks {
		l := c.lanes[c.subOf[mk.Process]]
		l.Marks = append(l.Marks, mk)
	}
	return c.lanes
}

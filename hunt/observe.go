package hunt

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
)

// Signature names one way a lock breaks: an anomaly's kind, and its class
// where the kind has classes.
type Signature string

func signatureOf(a checker.Anomaly) Signature {
	if a.Class == "" {
		return Signature(a.Kind)
	}
	return Signature(string(a.Kind) + "/" + string(a.Class))
}

// Kind and Class split a signature.
func (s Signature) Kind() checker.Kind {
	k, _, _ := strings.Cut(string(s), "/")
	return checker.Kind(k)
}

func (s Signature) Class() checker.Class {
	_, c, _ := strings.Cut(string(s), "/")
	return checker.Class(c)
}

// hazard reports whether an anomaly is the TTL hazard every lease lock
// has rather than a failure of this one: a holder that went on after its
// lease ran out (a lease-outlived double holder, under a pause, an
// overrun, a slow network), or what the guarded resource suffered from
// such overlaps in a run whose every double holder was lease-outlived.
func hazard(a checker.Anomaly, rep *checker.Report) bool {
	switch {
	case a.Kind == checker.KindDoubleHolder:
		return a.Class == checker.ClassLeaseOutlived
	case checker.SeverityOf(a.Kind) != checker.SeveritySafety || !resourceKind(a.Kind):
		return false
	}
	within := rep.Classes[checker.KindDoubleHolder][checker.ClassWithinLease]
	return rep.Count[checker.KindDoubleHolder] > 0 && within == 0
}

// resourceKind: anomalies of the guarded resource rather than of the lock
// (what a double holder does to the data it guards).
func resourceKind(k checker.Kind) bool {
	switch k {
	case checker.KindLostUpdate, checker.KindStaleWrite, checker.KindDuplicateWork, checker.KindOversell, checker.KindDoubleBuy:
		return true
	}
	return false
}

// Observation is what one run showed the hunt: its anomalies, how close it
// came, and the coverage it reached.
type Observation struct {
	Verdict checker.Verdict `json:"verdict"`
	// Failures and Hazards are the anomalies by signature, with the first
	// one's start in ms.
	Failures map[Signature]float64 `json:"failures,omitempty"`
	Hazards  map[Signature]float64 `json:"hazards,omitempty"`
	// MarginMs is checker.StatClosestGrant in ms; nil when no grant came
	// while another client's lease stood.
	MarginMs *float64 `json:"margin_ms,omitempty"`
	// Features are the coverage it reached: outcomes the lock produced,
	// the aims its faults landed in with the lock's state there, the
	// faults that took effect, the anomalies by signature.
	Features []string `json:"-"`
	Acquired int64    `json:"acquired"`
	Ops      int64    `json:"ops"`
	Landed   int      `json:"faults_landed,omitempty"`
	Untested []string `json:"untested,omitempty"`
}

// observe reads a finished run: its report, and its history for the
// coverage (dir empty: the report only).
func observe(res *locktorture.Result, dir string) (Observation, error) {
	o := Observation{Verdict: res.Verdict, Failures: map[Signature]float64{}, Hazards: map[Signature]float64{},
		Acquired: res.Stats.Acquired, Ops: res.Stats.Ops}
	feats := map[string]bool{}
	if rep := res.Report; rep != nil {
		o.Untested = rep.Untested
		for _, a := range rep.Anomalies {
			if a.HarnessStall {
				continue
			}
			sig, at := signatureOf(a), float64(a.StartNS)/1e6
			m := o.Failures
			if hazard(a, rep) {
				m = o.Hazards
			}
			if old, ok := m[sig]; !ok || at < old {
				m[sig] = at
			}
			feats["anomaly "+string(sig)] = true
		}
		for _, r := range rep.Results {
			if g, ok := r.Stats[checker.StatClosestGrant]; ok {
				ms := float64(g) / 1e6
				if o.MarginMs == nil || ms < *o.MarginMs {
					o.MarginMs = &ms
				}
			}
		}
	}
	if f := res.Stats.Faults; f != nil {
		for name, c := range f.ByFault {
			if c.TookEffect > 0 {
				o.Landed += c.TookEffect
				feats["landed "+name] = true
			}
			if c.Unfinished > 0 || c.GaveUp > 0 {
				feats["waited in vain "+name] = true
			}
		}
	}
	if dir != "" {
		if err := readCoverage(filepath.Join(dir, "history.jsonl"), feats); err != nil {
			return o, fmt.Errorf("read the coverage of %s: %w", dir, err)
		}
	}
	for f := range feats {
		o.Features = append(o.Features, f)
	}
	sort.Strings(o.Features)
	return o, nil
}

// clientState follows one client through the history, for the state a
// fault found it in.
type clientState struct {
	open    history.Op // the operation in flight, "" for none
	holding int        // leases held
}

var clientRef = regexp.MustCompile(`\bc([0-9]+)\b`)

// readCoverage streams a history and adds its coverage features: each
// outcome the lock produced ("outcome release/ok/not-deleted") and each
// fault start's aim, in the shape of its words (numbers, names and times
// taken out) with the state of the lock there ("aim pause-client | c#
// (paused holding lock:#...) | holding").
func readCoverage(path string, feats map[string]bool) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // a run that kept no history: its report is all there is
	}
	if err != nil {
		return err
	}
	defer f.Close()
	rd := history.NewReader(bufio.NewReaderSize(f, 1<<16))
	clients := map[int]*clientState{}
	ops := map[int64]history.Op{}
	state := func(c int) *clientState {
		s := clients[c]
		if s == nil {
			s = &clientState{}
			clients[c] = s
		}
		return s
	}
	for {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case e.Type == history.Invoke:
			ops[e.ID] = e.Op
			s := state(e.Client)
			s.open = e.Op
			if e.Op == history.Release && s.holding > 0 {
				s.holding--
			}
		case e.Type.IsCompletion():
			op := ops[e.ID]
			delete(ops, e.ID)
			s := state(e.Client)
			s.open = ""
			if op == history.Acquire && e.Type == history.OK {
				s.holding++
			}
			if e.Type == history.Unknown {
				s.holding = 0 // a new process takes the client's place
			}
			feats["outcome "+outcome(op, e)] = true
		case e.Op == history.Crash:
			state(e.Client).holding, state(e.Client).open = 0, ""
		case e.Op == history.FaultStart:
			feats["aim "+e.Fault+" | "+shape(e.Target)+" | "+lockState(e.Target, clients)] = true
		}
	}
}

// outcome names what an operation came to: op/type, and for a release
// whether it deleted the key, for an acquire whether it held the key for a
// while before refusing it.
func outcome(op history.Op, e history.Event) string {
	s := string(op) + "/" + string(e.Type)
	switch {
	case e.Deleted != nil && *e.Deleted:
		s += "/deleted"
	case e.Deleted != nil:
		s += "/not-deleted"
	case e.HeldTo > 0:
		s += "/refused-after-holding"
	}
	if e.Type == history.Fail && e.Attempts > 1 {
		s += "/after-waiting"
	}
	return s
}

// lockState is the state of the lock where a fault landed: of the client
// its target names ("holding", "in acquire", "idle"), else whether any
// client held a lease then.
func lockState(target string, clients map[int]*clientState) string {
	if m := clientRef.FindStringSubmatch(target); m != nil {
		var c int
		fmt.Sscan(m[1], &c)
		s := clients[c]
		switch {
		case s == nil:
			return "idle"
		case s.open != "":
			return "in " + string(s.open)
		case s.holding > 0:
			return "holding"
		}
		return "idle"
	}
	for _, s := range clients {
		if s.holding > 0 {
			return "a lease held"
		}
	}
	return "no lease held"
}

var (
	shapeNumber = regexp.MustCompile(`[0-9]+(\.[0-9]+)?(ns|µs|us|ms|s|m|h)?`)
	shapeSpace  = regexp.MustCompile(`\s+`)
)

// shape is a fault's target in words with what changes from one start to
// the next taken out: numbers, durations and names ending in them
// (c3, redis-1, lock:2) become '#'.
func shape(target string) string {
	s := shapeNumber.ReplaceAllString(target, "#")
	return strings.TrimSpace(shapeSpace.ReplaceAllString(s, " "))
}

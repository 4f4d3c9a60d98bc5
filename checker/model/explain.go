package model

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/internal/distinct"
)

// How a key found not linearizable is explained: its culprit and its
// visualization.

// maxWholeExact is the largest key the exact search takes in one piece:
// porcupine's memory grows with the square of it.
const maxWholeExact = 10000

// maxVisualized bounds how many starting states of a failed segment are
// rendered: each is a partition of its own in the HTML.
const maxVisualized = 3

// explain reruns porcupine verbosely on the failed segments, to name the
// operation no legal order could place and to draw the visualization.
func (l *linearizable) explain(r *Result, km *keyModel, failed []*keyCheck, deadline time.Time, faults []history.Window) {
	var parts [][]porcupine.Operation
	var owner []*keyCheck
	for _, kc := range failed {
		bits := kc.failed.bits()
		for i, st := range kc.from {
			if i == maxVisualized {
				break
			}
			parts = append(parts, kc.operations(kc.failed, bits, st, kc.failed.from > math.MinInt64, kCut))
			owner = append(owner, kc)
		}
	}
	model := newModel(km, nil) // each input carries its search's mode
	model.Partition = func([]porcupine.Operation) [][]porcupine.Operation { return parts }
	var all []porcupine.Operation
	for _, p := range parts {
		all = append(all, p...)
	}
	// The failed segments were searched to the end once already; give the
	// verbose rerun the same budget again rather than what is left.
	res, info := porcupine.CheckOperationsVerbose(model, all, max(time.Until(deadline), l.o.Timeout))
	written := ""
	if l.o.VisualizationPath != "" && res != porcupine.Ok {
		info.AddAnnotations(faultAnnotations(faults))
		if err := porcupine.VisualizePath(model, info, l.o.VisualizationPath); err != nil {
			r.Errors = append(r.Errors, "write visualization: "+err.Error())
		} else {
			// Named by its base name, beside the history: the detail
			// goes into summary.json and report.html, which must stay
			// true once the run folder is moved or attached.
			written = filepath.Base(l.o.VisualizationPath)
		}
	}
	partials := info.PartialLinearizationsOperations()
	done := map[*keyCheck]bool{}
	for p, kc := range owner {
		if done[kc] {
			continue
		}
		done[kc] = true
		var longest []porcupine.Operation
		if p < len(partials) {
			// The longest legal order, and among those the one that
			// assumes the fewest operations of unknown outcome happened:
			// it reads most like what the clients saw. porcupine lists
			// the orders in no fixed order, so a last tie goes to the
			// earliest calls: one history always reads the same.
			best := -1
			for _, seq := range partials[p] {
				n := guessed(seq)
				switch {
				case len(seq) > len(longest), len(seq) == len(longest) && n < best,
					len(seq) == len(longest) && n == best && earlier(seq, longest):
					longest, best = seq, n
				}
			}
		}
		r.Findings = append(r.Findings, kc.finding(km, model, parts[p], longest, written))
	}
}

// earlier reports whether order a comes before order b when read as lists
// of (call, return, client), the first difference deciding.
func earlier(a, b []porcupine.Operation) bool {
	for i := range min(len(a), len(b)) {
		x, y := a[i], b[i]
		if c := cmp.Or(cmp.Compare(x.Call, y.Call), cmp.Compare(x.Return, y.Return), cmp.Compare(x.ClientId, y.ClientId)); c != 0 {
			return c < 0
		}
	}
	return len(a) < len(b)
}

// finding names the first operation (by return) that the longest legal
// order of the failed segment could not place, and the state it met.
func (kc *keyCheck) finding(km *keyModel, model porcupine.Model, part, longest []porcupine.Operation, written string) Finding {
	placed := map[*lockInput]bool{}
	state := model.Init()
	for _, op := range longest {
		in := op.Input.(*lockInput)
		placed[in] = true
		_, state = model.Step(state, in, nil)
	}
	// The culprit is the first operation to return that no legal order
	// placed, preferring one whose outcome the client knew.
	var culprit *lockInput
	for _, op := range part {
		in := op.Input.(*lockInput)
		if in.op < 0 || placed[in] {
			continue
		}
		if earlierCulprit(in, culprit) {
			culprit = in
		}
	}
	a := Finding{Key: kc.key}
	st := state.(lockState)
	if culprit == nil {
		a.Detail = fmt.Sprintf("no order of the lock operations on %s is legal for a lease mutex", kc.key)
		return a
	}
	a.StartNS, a.EndNS = culprit.call, culprit.gaveUp
	a.Clients = []int{culprit.client}
	a.Processes = []int{culprit.process}
	a.Leases = []string{km.leaseName(culprit.lease)}
	if st.holder != 0 && st.holder != culprit.lease {
		h := km.meta(st.holder)
		a.Clients = distinct.Of(culprit.client, h.client)
		a.Processes = distinct.Of(culprit.process, h.process)
		a.Leases = append(a.Leases, h.id)
	}
	a.Detail = fmt.Sprintf("no order of the lock operations on %s is legal for a lease mutex: %s cannot follow any legal order of the operations before it (in the longest one found, the lock was then %s)",
		kc.key, describeCulprit(km, culprit), km.describeState(st))
	if written != "" {
		a.Detail += " (see " + written + ")"
	}
	return a
}

// earlierCulprit reports whether a makes a better culprit than b: a known
// outcome over an unknown one, then the earlier return, then the earlier call.
func earlierCulprit(a, b *lockInput) bool {
	if b == nil {
		return true
	}
	if au, bu := a.status == history.Unknown, b.status == history.Unknown; au != bu {
		return !au
	}
	if a.ret != b.ret {
		return a.ret < b.ret
	}
	return a.call < b.call
}

// guessed counts the operations of unknown outcome in a partial order.
func guessed(seq []porcupine.Operation) int {
	n := 0
	for _, op := range seq {
		if in := op.Input.(*lockInput); in.op >= 0 && in.status == history.Unknown {
			n++
		}
	}
	return n
}

func describeCulprit(km *keyModel, in *lockInput) string {
	what := map[opKind]string{kAcquire: "acquire", kRelease: "release", kRefresh: "refresh"}[in.kind]
	out := string(in.status)
	if in.kind == kRelease && in.status == history.OK {
		if in.deleted {
			out = "ok, deleted the key"
		} else {
			out = "ok, deleted nothing"
		}
	}
	return fmt.Sprintf("client %d's %s of lease %s (%s, %s to %s)",
		in.client, what, km.leaseName(in.lease), out, history.FormatTime(in.call), history.FormatTime(in.gaveUp))
}

// sortStates orders states so that searches, and the explanation of a
// failure, do not depend on map iteration order.
func sortStates(s []lockState) {
	slices.SortFunc(s, func(a, b lockState) int {
		return cmp.Or(cmp.Compare(a.holder, b.holder), cmp.Compare(a.start, b.start), cmp.Compare(a.now, b.now),
			cmp.Compare(a.applied, b.applied), cmp.Compare(a.ghosts, b.ghosts))
	})
}

// faultAnnotations draws every fault window in porcupine's visualization, on
// a "faults" line of its own, so the operations no order could place are
// seen against what the nemesis was doing.
func faultAnnotations(ws []history.Window) []porcupine.Annotation {
	out := make([]porcupine.Annotation, 0, len(ws))
	for _, w := range ws {
		out = append(out, porcupine.Annotation{Tag: "faults", Start: w.Start, End: w.End,
			Description: w.Fault, Details: fmt.Sprintf("%s on %s, %s to %s", w.Fault, w.Target, history.FormatTime(w.Start), history.FormatTime(w.End)),
			BackgroundColor: "#f6d6d6"})
	}
	return out
}

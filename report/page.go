package report

import (
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/history"
	"github.com/locktorture/locktorture/summary"
)

// page is what report.html shows.
type page struct {
	Title, RunID, Verdict, Started string
	Interrupted                    bool
	Params                         [][2]string
	Replay                         string
	// ReplayNote says, in its place, why a run cannot be replayed.
	ReplayNote string
	Counts     []countRow
	// ClassesListed: the summary has no class counts (an older one), so
	// the classes shown are those of the listed anomalies only.
	ClassesListed bool
	Stats         *summary.Stats
	Unknowns      []string
	Untested      []string
	Anomalies     []anomalyView
	AnomalyTotal  int
	Keys          []keyView
	HiddenKeys    int
	HiddenOver    bool // at least HiddenKeys: the count stopped
	Plots         []plotView
	Faults        []faultView
	HiddenFaults  int
	HasLin        bool
	FirstTarget   string
	End           string
}

type countRow struct {
	Kind    string
	N       int
	Classes string
}

type anomalyView struct {
	N                      int
	ID, Kind, Detail, When string
	Clients, Key           string
	Lines                  []int
	Timeline               string
	AfterSwitch            bool
}

type keyView struct {
	Key, ID      string
	Lanes, Holds int
	Overview     template.HTML
	Windows      []windowView
}

type windowView struct {
	ID, Title, Span string
	First           bool
	// Anomalies are those drawn in the window: the first few explained
	// above the drawing (Notes), the others linked below it (More).
	Anomalies   []anomalyView
	Notes, More []anomalyView
	SVG         template.HTML
}

// maxNotes is how many anomalies a window explains above its drawing, so
// the drawing stays in view when the page opens on it.
const maxNotes = 3

type faultView struct {
	N                                 int // its F-number on the timeline
	Fault, Target, Start, End, Length string
}

// Limits of the page.
const (
	maxKeysShown   = 6
	maxFaultsShown = 200
)

func buildPage(m *model, sb *seriesBuilder, s *summary.Summary, dir string) (*page, error) {
	pg := pageHead(s)
	pg.End = secs(m.End)
	pg.countRows(s)
	keys := keysShown(m, pg)
	views := pg.anomalyViews(m)
	for _, km := range keys {
		pg.Keys = append(pg.Keys, keyViewOf(m, km, views, pg))
	}
	for i, f := range m.Faults {
		if i == maxFaultsShown {
			pg.HiddenFaults = len(m.Faults) - i
			break
		}
		target := f.Target
		if f.NoEffect != "" {
			target += " (never took effect: " + f.NoEffect + ")"
		}
		pg.Faults = append(pg.Faults, faultView{N: i + 1, Fault: f.Fault, Target: target, Start: secs(f.Start), End: secs(f.End), Length: secs(f.End - f.Start)})
	}
	var err error
	if pg.Plots, err = plots(sb, m); err != nil {
		return nil, err
	}
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "linearizability.html")); err == nil {
			pg.HasLin = true
		}
	}
	return pg, nil
}

// pageHead is the page's top: the verdict, the run's header and its replay
// command, what was not tested and the checks that could not decide.
func pageHead(s *summary.Summary) *page {
	pg := &page{Verdict: string(s.Verdict), Interrupted: s.Interrupted, RunID: s.RunID}
	if s.Stats.Ops > 0 || s.Stats.DurationMs > 0 { // a run's summary, not a check's
		pg.Stats = &s.Stats
	}
	if r := s.Run; r != nil {
		pg.RunID = r.ID
		pg.Title = r.LockLabel()
		pg.Started = fmtStarted(r.Started)
		if _, err := r.ReplayLock(); err != nil {
			pg.ReplayNote = err.Error()
		} else {
			pg.Replay = ReplayCommand(r)
		}
		pg.Params = params(r)
	} else {
		pg.Title = "history"
	}
	pg.Untested = s.Untested
	for _, c := range s.Checkers {
		if c.Verdict == checker.Unknown {
			pg.Unknowns = append(pg.Unknowns, c.Checker+": "+c.Error)
		}
	}
	return pg
}

// keysShown orders the keys with anomalies first, in the order of their
// first anomaly, and cuts the list at maxKeysShown (the page counts the
// rest as hidden).
func keysShown(m *model, pg *page) []*keyModel {
	order := map[string]int{}
	for _, a := range m.Anomalies {
		if _, ok := order[a.Key]; !ok {
			order[a.Key] = len(order)
		}
	}
	keys := append([]*keyModel(nil), m.Keys...)
	sort.SliceStable(keys, func(i, j int) bool {
		oi, iok := order[keys[i].Key]
		oj, jok := order[keys[j].Key]
		if iok != jok {
			return iok
		}
		return oi < oj
	})
	pg.HiddenKeys, pg.HiddenOver = m.HiddenKeys, m.HiddenOver
	if len(keys) > maxKeysShown {
		pg.HiddenKeys += len(keys) - maxKeysShown
		keys = keys[:maxKeysShown]
	}
	return keys
}

// anomalyViews lists every anomaly on the page and returns them by number,
// for the key windows that show them.
func (pg *page) anomalyViews(m *model) map[int]*anomalyView {
	for _, a := range m.Anomalies {
		v := anomalyView{N: a.N, ID: fmt.Sprintf("anomaly-%d", a.N), Kind: kindText(a.Kind, a.Class) + objectText(a.SharedObject), Detail: a.Detail,
			When: secs(a.StartNS) + " – " + secs(a.EndNS), Key: a.Key, Lines: a.Lines, AfterSwitch: a.AfterSwitch}
		var cs []string
		for _, c := range a.Clients {
			cs = append(cs, fmt.Sprint(c))
		}
		v.Clients = strings.Join(cs, ", ")
		pg.Anomalies = append(pg.Anomalies, v)
	}
	views := map[int]*anomalyView{}
	for i := range pg.Anomalies {
		views[pg.Anomalies[i].N] = &pg.Anomalies[i]
	}
	return views
}

// keyViewOf draws one key: its overview and a window around each stretch
// worth a closer look, with the anomalies that fall in it.
func keyViewOf(m *model, km *keyModel, views map[int]*anomalyView, pg *page) keyView {
	ws := m.windows(km)
	kv := keyView{Key: km.Key, ID: "key-" + anchorSafe(km.Key), Lanes: len(km.Lanes), Holds: km.Holds, Overview: template.HTML(overviewSVG(m, km, ws))}
	for _, w := range ws {
		wv := windowView{ID: w.ID, Title: w.Title(m), Span: secs(w.From) + " – " + secs(w.To), SVG: template.HTML(detailSVG(m, km, w))}
		for _, n := range w.Anomalies {
			v := views[n]
			v.Timeline = "#t-anomaly-" + fmt.Sprint(n)
			wv.Anomalies = append(wv.Anomalies, *v)
			if n == 1 {
				wv.First, pg.FirstTarget = true, w.ID
			}
		}
		wv.Notes = wv.Anomalies[:min(len(wv.Anomalies), maxNotes)]
		wv.More = wv.Anomalies[len(wv.Notes):]
		kv.Windows = append(kv.Windows, wv)
	}
	return kv
}

// params are the run's parameters as the page lists them: the header's
// own fields (a lock program's name and version beside the lock setting),
// then every recorded parameter by name.
func params(r *history.RunInfo) [][2]string {
	ps := [][2]string{{"lock", r.Lock}}
	if r.Program != "" {
		ps = append(ps, [2]string{"program", r.Program})
	}
	ps = append(ps, [][2]string{{"workload", r.Workload}, {"topology", r.Topology},
		{"clients", fmt.Sprint(r.Clients)}, {"keys", fmt.Sprint(r.Keys)}, {"ttl", r.TTL().String()}, {"seed", fmt.Sprint(r.Seed)}}...)
	names := make([]string, 0, len(r.Params))
	for k := range r.Params {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if v := r.Params[k]; v != "" {
			ps = append(ps, [2]string{k, v})
		}
	}
	return ps
}

// countRows fills the outcome table: every kind with its count and its
// classes, both over every anomaly found. A summary written before
// summary.json counted classes has only its listed anomalies to count
// them from, and the page says so.
func (pg *page) countRows(s *summary.Summary) {
	classes := s.Classes
	if classes == nil {
		pg.ClassesListed = true
		classes = checker.ClassCounts{}
		for _, a := range s.Anomalies {
			if a.Class != "" {
				if classes[a.Kind] == nil {
					classes[a.Kind] = map[checker.Class]int{}
				}
				classes[a.Kind][a.Class]++
			}
		}
	}
	for k, n := range s.Counts {
		pg.Counts = append(pg.Counts, countRow{Kind: string(k), N: n, Classes: checker.ClassText(classes[k])})
		pg.AnomalyTotal += n
	}
	sort.Slice(pg.Counts, func(i, j int) bool { return pg.Counts[i].Kind < pg.Counts[j].Kind })
}

var pageTmpl = template.Must(template.New("report").Parse(pageHTML))

func writePage(w io.Writer, pg *page) error { return pageTmpl.Execute(w, pg) }

package report_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/checker"
	"github.com/locktorture/locktorture/report"
)

// These tests open real pages in headless Chromium (Debian's chromium) and
// check what a person would see. Set LOCKTORTURE_SCREENSHOTS=docs to write
// the README's screenshots.

// browser starts headless Chromium for one test. Without Chromium the test
// skips, except in CI (CI=true), where .ci/run installs it.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium not found: scripts/install-deps.sh installs it (apt-get install chromium)")
		}
		t.Skip("chromium not installed (apt-get install chromium); CI=true makes this a failure")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 1400))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return ctx
}

// pageView is what the tests read from the DOM.
type pageView struct {
	OverviewLanes   int     `json:"overviewLanes"`
	ClientLanes     int     `json:"clientLanes"`
	FaultBands      int     `json:"faultBands"`
	AnomalyItems    int     `json:"anomalyItems"`
	AnomalyDrawn    int     `json:"anomalyDrawn"`
	AnomalyMarks    int     `json:"anomalyMarks"`
	Plots           int     `json:"plots"`
	FirstTop        float64 `json:"firstTop"`
	ScrollY         float64 `json:"scrollY"`
	Replay          string  `json:"replay"`
	Verdict         string  `json:"verdict"`
	MatrixCells     int     `json:"matrixCells"`
	MatrixUnexp     int     `json:"matrixUnexpected"`
	MatrixLinks     int     `json:"matrixLinks"`
	ExternalSources int     `json:"externalSources"`
}

const readDOM = `(() => {
  const q = s => document.querySelectorAll(s);
  const ov = document.querySelector('svg.overview');
  const first = document.querySelector('[data-first]');
  const ext = [...q('[src],link[href],use[href]')].filter(e => !/^(data:|#)/.test(e.getAttribute('src') || e.getAttribute('href') || '')).length;
  return {
    overviewLanes: ov ? ov.querySelectorAll('g.lane').length : 0,
    clientLanes: ov ? ov.querySelectorAll('g.lane[data-sub="0"]').length : 0,
    faultBands: q('.fault-band').length,
    anomalyItems: q('li.anomaly-item').length,
    anomalyDrawn: q('g.anomaly[id^="t-anomaly-"]').length,
    anomalyMarks: q('.anomaly-mark').length,
    plots: q('svg.plot').length,
    firstTop: first ? first.getBoundingClientRect().top : -1,
    scrollY: window.scrollY,
    replay: (document.getElementById('replay') || {}).textContent || '',
    verdict: (document.querySelector('.verdict') || {}).textContent || '',
    matrixCells: q('td.cell').length,
    matrixUnexpected: q('td.cell.unexpected').length,
    matrixLinks: q('td.cell a').length,
    externalSources: ext,
  };
})()`

// open loads a file in the browser, returns what the DOM shows and a
// screenshot, and fails the test on any failed request or console error.
func open(t *testing.T, ctx context.Context, file string) (pageView, []byte) {
	t.Helper()
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	return openURL(t, ctx, "file://"+abs)
}

// openURL is open for any address.
func openURL(t *testing.T, ctx context.Context, file string) (pageView, []byte) {
	t.Helper()
	var mu sync.Mutex
	var problems []string
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventLoadingFailed:
			problems = append(problems, "request failed: "+e.ErrorText)
		case *runtime.EventExceptionThrown:
			problems = append(problems, "script error: "+e.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				problems = append(problems, "console error")
			}
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				problems = append(problems, "browser error: "+e.Entry.Text)
			}
		}
	})
	if err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var v pageView
	var png []byte
	err = chromedp.Do(tctx,
		chromedp.Navigate(file),
		chromedp.WaitReady("body"),
		chromedp.Sleep(300*time.Millisecond), // let the load handler scroll
	)
	if err == nil {
		v, err = chromedp.Run(tctx, chromedp.Evaluate[pageView](readDOM))
	}
	if err == nil {
		png, err = chromedp.Run(tctx, chromedp.CaptureScreenshot())
	}
	if err != nil {
		t.Fatalf("render %s: %v", file, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("%s: %s", file, strings.Join(problems, "; "))
	}
	if v.ExternalSources != 0 {
		t.Errorf("%s loads %d resources from outside the page", file, v.ExternalSources)
	}
	return v, png
}

func saveShot(t *testing.T, name string, png []byte) {
	dir := os.Getenv("LOCKTORTURE_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if len(png) < 10_000 {
		t.Errorf("screenshot %s is %d bytes: the page looks empty", name, len(png))
	}
}

// layoutView is what the tests measure of a page's layout.
type layoutView struct {
	FaultLabels   int      `json:"faultLabels"`
	AnomalyLabels int      `json:"anomalyLabels"`
	Collisions    []string `json:"collisions"`
	LegendItems   int      `json:"legendItems"`
	LegendOnData  []string `json:"legendOnData"`
	Misaligned    []string `json:"misaligned"`
	PlotFont      string   `json:"plotFont"`
	BodyFont      string   `json:"bodyFont"`
	AbsLinks      []string `json:"absLinks"`
	AbsText       bool     `json:"absText"`
	EarlyFaults   int      `json:"earlyFaults"`
}

// readLayout measures, in the browser, whether any two labels of one
// timeline (fault labels, anomaly labels) overlap, whether any legend entry
// of a plot lies on its data area, whether each plot's data area is under
// the timeline's lanes, and whether a link or any text (tooltips included)
// holds an absolute path, dir in particular.
const readLayout = `((dir) => {
  const box = e => e.getBoundingClientRect();
  const meet = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  const out = {faultLabels: 0, anomalyLabels: 0, collisions: [], legendItems: 0, legendOnData: [], misaligned: [], absLinks: [], earlyFaults: 0};
  for (const svg of document.querySelectorAll('svg.timeline')) {
    const ls = [...svg.querySelectorAll('.fault-label, .anomaly-label')];
    out.faultLabels += svg.querySelectorAll('.fault-label').length;
    out.anomalyLabels += svg.querySelectorAll('.anomaly-label').length;
    for (let i = 0; i < ls.length; i++)
      for (let j = i + 1; j < ls.length; j++)
        if (meet(box(ls[i]), box(ls[j]))) out.collisions.push(ls[i].firstChild.textContent + ' / ' + ls[j].firstChild.textContent);
  }
  const lane = document.querySelector('svg.overview g.lane rect');
  for (const svg of document.querySelectorAll('svg.plot')) {
    const area = box(svg.querySelector('rect.plot-area'));
    for (const item of document.querySelectorAll('.plot-legend[data-plot="' + svg.id + '"] > span')) {
      out.legendItems++;
      if (meet(box(item), area)) out.legendOnData.push(svg.id + ': ' + item.textContent);
    }
    if (lane && (Math.abs(box(lane).left - area.left) > 1 || Math.abs(box(lane).right - area.right) > 1))
      out.misaligned.push(svg.id + ': data ' + area.left + '..' + area.right + ', lanes ' + box(lane).left + '..' + box(lane).right);
    out.plotFont = getComputedStyle(svg.querySelector('text')).fontFamily;
  }
  out.bodyFont = getComputedStyle(document.body).fontFamily;
  for (const e of document.querySelectorAll('[href],[src]')) {
    const v = e.getAttribute('href') || e.getAttribute('src');
    if (/^(\/|file:|[A-Za-z]:\\)/.test(v)) out.absLinks.push(v);
  }
  const html = document.documentElement.outerHTML;
  out.absText = html.includes(dir) || /[\s("'](\/tmp|\/home|\/root|\/work)\//.test(html);
  for (const td of document.querySelectorAll('tr.fault-row td:nth-child(4)')) if (parseFloat(td.textContent) < 5) out.earlyFaults++;
  return out;
})(%q)`

// runReport runs o, which must end with verdict want, and opens the run's
// report.html in ctx, keeping its first screen as shot.
func runReport(t *testing.T, ctx context.Context, o locktorture.Options, want checker.Verdict, shot string) (*locktorture.Result, pageView) {
	t.Helper()
	res, err := locktorture.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != want {
		t.Fatalf("run %s: verdict %s, want %s", o.RunID, res.Verdict, want)
	}
	v, png := open(t, ctx, filepath.Join(res.Dir, report.FileName))
	saveShot(t, shot, png)
	return res, v
}

// TestBrowserReportOfBrokenRun: a crowded broken run (set-px with overruns
// under a client pause every 300 ms: at least six faults in its first five
// seconds) reads as a page to publish: no two labels of a timeline
// overlap, at the full width of the page or a narrow one; the plots'
// legends lie off their data areas, which sit under the timeline's lanes,
// in the page's font; and nothing on the page names a path of the machine
// that ran it.
func TestBrowserReportOfBrokenRun(t *testing.T) {
	ctx := browser(t)
	out := t.TempDir()
	res, v := runReport(t, ctx, locktorture.Options{
		Lock: "set-px", Overrun: 0.3, TTL: 200 * time.Millisecond, HoldMin: 10 * time.Millisecond, HoldMax: 40 * time.Millisecond,
		Clients: 6, Duration: 5 * time.Second, Faults: []string{"pause-client"}, NemesisInterval: 300 * time.Millisecond,
		NemesisDuration: 150 * time.Millisecond, Seed: 3, OutDir: out, RunID: "set-px-overrun",
	}, checker.Invalid, "report-broken.png")
	listed := len(res.Report.Anomalies)
	switch {
	case v.ClientLanes != 6:
		t.Errorf("overview has %d client lanes, want 6", v.ClientLanes)
	case v.FaultBands == 0:
		t.Errorf("no fault band drawn although pause-client ran")
	case v.AnomalyItems != listed:
		t.Errorf("%d anomalies listed, summary has %d", v.AnomalyItems, listed)
	case v.AnomalyDrawn == 0 || v.AnomalyMarks == 0:
		t.Errorf("anomalies not drawn: %d in detail, %d marks in overview", v.AnomalyDrawn, v.AnomalyMarks)
	case v.Plots != 2:
		t.Errorf("%d plots, want throughput and latency", v.Plots)
	case v.ScrollY <= 0 || v.FirstTop < -5 || v.FirstTop > 200:
		t.Errorf("the first anomaly is not in view on opening (scrollY %v, its top at %v)", v.ScrollY, v.FirstTop)
	case !strings.Contains(v.Replay, "--lock set-px") || !strings.Contains(v.Replay, "--seed 3") || !strings.Contains(v.Replay, "--faults pause-client"):
		t.Errorf("replay command %q", v.Replay)
	}
	// The whole-run overview with its fault labels, and the plots.
	for id, name := range map[string]string{"timeline": "report-broken-timeline.png", "plots": "report-broken-plots.png"} {
		_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.getElementById("`+id+`").scrollIntoView({block: "start"}), true)`))
		var shot []byte
		if err == nil {
			shot, err = chromedp.Run(ctx, chromedp.CaptureScreenshot())
		}
		if err != nil {
			t.Fatal(err)
		}
		saveShot(t, name, shot)
	}
	for _, width := range []int64{1280, 720} {
		err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 1400))
		var lay layoutView
		if err == nil {
			lay, err = chromedp.Run(ctx, chromedp.Evaluate[layoutView](fmt.Sprintf(readLayout, out)))
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("width %d: %d fault labels, %d anomaly labels, %d legend entries, %d faults before 5s", width,
			lay.FaultLabels, lay.AnomalyLabels, lay.LegendItems, lay.EarlyFaults)
		switch {
		case lay.EarlyFaults < 6:
			t.Errorf("%d faults in the first 5s: not the crowded run this test is about", lay.EarlyFaults)
		case lay.FaultLabels < 6 || lay.AnomalyLabels == 0 || lay.LegendItems < 6:
			t.Errorf("too little drawn to judge: %+v", lay)
		}
		if len(lay.Collisions) > 0 {
			t.Errorf("width %d: labels overlap: %s", width, strings.Join(lay.Collisions, "; "))
		}
		if len(lay.LegendOnData) > 0 {
			t.Errorf("width %d: legend entries on the data: %s", width, strings.Join(lay.LegendOnData, "; "))
		}
		if len(lay.Misaligned) > 0 {
			t.Errorf("width %d: plots not under the timeline: %s", width, strings.Join(lay.Misaligned, "; "))
		}
		if lay.PlotFont != lay.BodyFont {
			t.Errorf("plots drawn in %q, the page in %q", lay.PlotFont, lay.BodyFont)
		}
		if len(lay.AbsLinks) > 0 || lay.AbsText {
			t.Errorf("the page names absolute paths: links %q, in its text: %v", lay.AbsLinks, lay.AbsText)
		}
	}
}

func TestBrowserReportOfValidRun(t *testing.T) {
	ctx := browser(t)
	res, v := runReport(t, ctx, locktorture.Options{
		Lock: "token", TTL: 200 * time.Millisecond, HoldMin: 10 * time.Millisecond, HoldMax: 40 * time.Millisecond,
		Clients: 4, Duration: 3 * time.Second, Seed: 4, OutDir: t.TempDir(), RunID: "token-valid",
	}, checker.Valid, "report-valid.png")
	if v.ClientLanes != 4 || v.AnomalyItems != 0 || v.AnomalyDrawn != 0 || v.FaultBands != 0 || v.Plots != 2 || v.Verdict != "valid" {
		t.Errorf("valid run's page: %+v", v)
	}
	// The results folder's index lists it.
	idx, err := report.Index(context.Background(), filepath.Dir(res.Dir))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(idx)
	if err != nil || !strings.Contains(string(b), `href="token-valid/report.html"`) {
		t.Errorf("index.html does not link the run's report (err %v)", err)
	}
}

func TestBrowserMatrixPage(t *testing.T) {
	ctx := browser(t)
	ms := time.Millisecond
	page := report.MatrixPage{
		Title: "Locks under pause and long work", Generated: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC),
		Locks: []string{"set-px", "token", "watchdog"}, Faults: []string{"long-work", "pause-client"},
		Cells: []report.MatrixCell{
			{Lock: "set-px", Fault: "long-work", Expect: report.Expectation{Breaks: true, Kind: "foreign-release"},
				Seeds: seeds(3, []string{"foreign-release"}, 410*ms, 380*ms, 1200*ms)},
			{Lock: "set-px", Fault: "pause-client", Expect: report.Expectation{Breaks: true, Kind: "double-holder", Class: "lease-outlived"},
				Seeds: seeds(3, []string{"double-holder/lease-outlived"}, 900*ms, 0, 2100*ms)},
			{Lock: "token", Fault: "long-work", Expect: report.Expectation{Breaks: true, Kind: "double-holder"},
				Seeds: seeds(3, []string{"double-holder/lease-outlived"}, 500*ms, 700*ms, 650*ms)},
			{Lock: "token", Fault: "pause-client", Expect: report.Expectation{Breaks: true, Kind: "double-holder"},
				Seeds: seeds(3, []string{"double-holder/lease-outlived"}, 800*ms, 950*ms, 1100*ms)},
			{Lock: "watchdog", Fault: "long-work", Expect: report.Expectation{},
				Seeds: seeds(3, nil, 0, 0, 0)},
			{Lock: "watchdog", Fault: "pause-client", Expect: report.Expectation{},
				Seeds: seeds(3, []string{"double-holder/lease-outlived"}, 0, 1500*ms, 0)},
		},
	}
	file := filepath.Join(t.TempDir(), "index.html")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := report.Matrix(f, page); err != nil {
		t.Fatal(err)
	}
	f.Close()
	v, png := open(t, ctx, file)
	saveShot(t, "report-matrix.png", png)
	if v.MatrixCells != 6 || v.MatrixUnexp != 1 || v.MatrixLinks != 18 {
		t.Errorf("matrix page: %d cells (want 6), %d unexpected (want 1: watchdog broke under pause), %d seed links (want 18)",
			v.MatrixCells, v.MatrixUnexp, v.MatrixLinks)
	}
}

// seeds makes n seed runs; a nonzero ttf means that seed found the kinds.
func seeds(n int, found []string, ttf ...time.Duration) []report.SeedRun {
	var out []report.SeedRun
	for i := 0; i < n; i++ {
		r := report.SeedRun{Seed: int64(i + 1), Verdict: "valid", Report: fmt.Sprintf("runs/seed%d/report.html", i+1)}
		if ttf[i] > 0 {
			r.Verdict, r.Found, r.FirstAnomaly = "invalid", found, ttf[i]
		}
		out = append(out, r)
	}
	return out
}

// serveView is what the tests read from the index `torture serve` shows.
type serveView struct {
	Runs     []string `json:"runs"`
	Matrices []string `json:"matrices"`
}

const readServe = `(() => ({
  runs: [...document.querySelectorAll('tr.run-row td:nth-child(2) > a')].map(a => a.getAttribute('href')),
  matrices: [...document.querySelectorAll('tr.matrix-row a')].map(a => a.getAttribute('href')),
}))()`

// TestBrowserServe: the server of a results folder lists its runs and
// matrices, opens a run's report, and lists a run that finished after it
// started on the next load of the index.
func TestBrowserServe(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	quick := func(id string, seed int64) {
		t.Helper()
		_, err := locktorture.Run(context.Background(), locktorture.Options{Lock: "token", TTL: 200 * time.Millisecond,
			HoldMin: 5 * time.Millisecond, HoldMax: 20 * time.Millisecond, Clients: 2, Duration: time.Second, Seed: seed,
			OutDir: dir, RunID: id})
		if err != nil {
			t.Fatal(err)
		}
	}
	quick("first", 1)
	// A matrix folder, as `torture matrix --out` leaves one.
	mdir := filepath.Join(dir, "nightly")
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mdir, "matrix.json"), []byte(`{"name":"nightly","runs":1,"cells":[{}],"as_expected":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(mdir, report.IndexFileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := report.Matrix(f, report.MatrixPage{Title: "nightly"}); err != nil {
		t.Fatal(err)
	}
	f.Close()

	srv, err := report.NewServer(dir)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	base := "http://" + ln.Addr().String() + "/"

	index := func() serveView {
		t.Helper()
		_, png := openURL(t, ctx, base)
		saveShot(t, "serve-index.png", png)
		v, err := chromedp.Run(ctx, chromedp.Evaluate[serveView](readServe))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	v := index()
	if strings.Join(v.Runs, " ") != "first/report.html" || strings.Join(v.Matrices, " ") != "nightly/" {
		t.Fatalf("index lists runs %q and matrices %q, want first/report.html and nightly/", v.Runs, v.Matrices)
	}
	if pv, _ := openURL(t, ctx, base+v.Runs[0]); pv.Verdict != "valid" || pv.Plots != 2 || pv.ClientLanes != 2 {
		t.Errorf("the run's report through the server: %+v", pv)
	}
	if pv, _ := openURL(t, ctx, base+v.Matrices[0]); pv.Verdict != "" {
		t.Errorf("the matrix page through the server: %+v", pv)
	}

	quick("second", 2)
	if v := index(); len(v.Runs) != 2 || !slices.Contains(v.Runs, "second/report.html") {
		t.Errorf("after a second run the index lists %q", v.Runs)
	}
}

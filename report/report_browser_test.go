package report_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(tctx,
		chromedp.Navigate("file://"+abs),
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

func TestBrowserReportOfBrokenRun(t *testing.T) {
	ctx := browser(t)
	res, err := locktorture.Run(context.Background(), locktorture.Options{
		Lock: "set-px", Overrun: 0.3, TTL: 200 * time.Millisecond, HoldMin: 10 * time.Millisecond, HoldMax: 40 * time.Millisecond,
		Clients: 4, Duration: 3 * time.Second, Faults: []string{"pause-client"}, NemesisInterval: 500 * time.Millisecond,
		Seed: 3, OutDir: t.TempDir(), RunID: "set-px-overrun",
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != checker.Invalid {
		t.Fatalf("set-px with overruns: verdict %s, want invalid", res.Verdict)
	}
	v, png := open(t, ctx, filepath.Join(res.Dir, report.FileName))
	saveShot(t, "report-broken.png", png)
	listed := len(res.Report.Anomalies)
	switch {
	case v.ClientLanes != 4:
		t.Errorf("overview has %d client lanes, want 4", v.ClientLanes)
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
	case !strings.Contains(v.Replay, "--lock set-px") || !strings.Contains(v.Replay, "--seed 3") || !strings.Contains(v.Replay, "--nemesis pause-client"):
		t.Errorf("replay command %q", v.Replay)
	}
}

func TestBrowserReportOfValidRun(t *testing.T) {
	ctx := browser(t)
	res, err := locktorture.Run(context.Background(), locktorture.Options{
		Lock: "token", TTL: 200 * time.Millisecond, HoldMin: 10 * time.Millisecond, HoldMax: 40 * time.Millisecond,
		Clients: 4, Duration: 3 * time.Second, Seed: 4, OutDir: t.TempDir(), RunID: "token-valid",
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != checker.Valid {
		t.Fatalf("token without faults: verdict %s, want valid", res.Verdict)
	}
	v, png := open(t, ctx, filepath.Join(res.Dir, report.FileName))
	saveShot(t, "report-valid.png", png)
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

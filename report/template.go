package report

// baseCSS is shared by every page: plain, print-friendly, no web fonts.
const baseCSS = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0;color:#222;background:#fff}
main{max-width:1240px;margin:0 auto;padding:12px 20px 60px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:3px}
h3{font-size:15px;margin:18px 0 4px}
code,pre{font:12.5px/1.4 ui-monospace,"DejaVu Sans Mono",monospace}
pre{background:#f4f4f4;padding:8px 10px;border-radius:4px;overflow-x:auto;white-space:pre-wrap;word-break:break-all}
table{border-collapse:collapse;margin:4px 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f6f6;font-weight:600}
a{color:#1f5fa8}
.verdict{display:inline-block;padding:1px 10px;border-radius:12px;font-weight:700;color:#fff}
.verdict-valid{background:#2e8540}.verdict-invalid{background:#c62828}.verdict-unknown{background:#8a6d00}.verdict-untested{background:#5f6b7a}
.muted{color:#666}.small{font-size:12px}
.cols{display:flex;gap:24px;flex-wrap:wrap}
`

// timelineCSS styles the hand-drawn timeline SVG (svg.go).
const timelineCSS = `
svg.timeline{display:block;max-width:1200px;font:11px system-ui,"DejaVu Sans",sans-serif}
.lane-label{text-anchor:end;fill:#333}
.lease{fill:#b9e0f5}.hold{fill:#0072b2}.outlived{fill:#e69f00}
.refresh{stroke:#002b45;stroke-width:1.5}
.unknown rect{fill:rgba(204,121,167,.12);stroke:#cc79a7;stroke-dasharray:3 2}.unknown text{fill:#a0487b;font-weight:700}
.fault-band rect{fill:rgba(240,228,66,.38)}.fault-label{fill:#5c5200;font-size:10px}
.switch line{stroke:#009e73;stroke-width:1.5;stroke-dasharray:5 3}
.anomaly rect{fill:rgba(213,94,0,.14);stroke:#d55e00;stroke-width:.8}.anomaly-label{fill:#b34700;font-weight:700;font-size:11px}
.anomaly-mark line{stroke:#d55e00;stroke-width:1.2}.anomaly-mark path{fill:#d55e00}
.window-outline{fill:rgba(0,0,0,.03);stroke:#444;stroke-dasharray:4 2}
.tick{stroke:#ddd}.axis{stroke:#999}.tick-label{text-anchor:middle;fill:#555;font-size:10px}
.window{border-left:4px solid #bbb;padding:2px 0 8px 12px;margin:14px 0}
.window.has-anomaly{border-left-color:#c62828}
.window:target,.anomaly-item:target,.fault-row:target{background:#fff8e1}
.legend span{display:inline-flex;align-items:center;margin-right:14px;font-size:12px}
.sw{display:inline-block;width:22px;height:10px;margin-right:5px;vertical-align:middle}
ol.anomalies{max-height:300px;overflow-y:auto;border:1px solid #eee;padding:6px 10px 6px 44px;margin:0}ol.anomalies li{margin:3px 0}
dl.params{display:grid;grid-template-columns:repeat(3,max-content 1fr);gap:2px 10px;margin:0}dl.params dt{font-weight:600}dl.params dd{margin:0}
.note{margin:2px 0}
svg.plot{display:block;max-width:1200px;height:auto;font-family:inherit}
.plot-head{margin:14px 0 2px}.plot-head h3{display:inline;margin-right:14px}
`

const pageHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · {{.RunID}}</title>
<style>` + baseCSS + timelineCSS + `</style>
</head><body><main>
<h1>{{.Title}} <span class="verdict verdict-{{.Verdict}}">{{.Verdict}}</span></h1>
<div class="muted">run <code>{{.RunID}}</code>{{if .Started}}, started {{.Started}}{{end}}, {{.End}} of history{{if .Interrupted}}, <b>interrupted</b>{{end}}</div>
{{range .Unknowns}}<p><b>undecided:</b> {{.}}</p>{{end}}
{{range .Untested}}<p class="untested"><b>not tested:</b> {{.}}</p>{{end}}
<div class="cols">
<div><h2>Run</h2><dl class="params" id="params">{{range .Params}}<dt>{{index . 0}}</dt><dd>{{index . 1}}</dd>{{end}}</dl></div>
<div><h2>Outcome</h2>
<table id="counts"><tr><th>anomaly</th><th>count</th><th>classes{{if .ClassesListed}} (of those listed){{end}}</th></tr>
{{range .Counts}}<tr><td>{{.Kind}}</td><td>{{.N}}</td><td>{{.Classes}}</td></tr>{{else}}<tr><td colspan="3">none</td></tr>{{end}}</table>
{{with .Stats}}<p class="small">{{.Ops}} operations ({{printf "%.0f" .OpsPerSec}}/s): {{.Acquired}} acquired, {{.AcquireFailed}} failed, {{.Unknown}} unknown, {{.Crashes}} crashes{{if .ResourceOps}}; {{.ResourceOps}} resource operations{{end}}</p>{{end}}
<p class="small">Files: <a href="history.jsonl">history.jsonl</a> · <a href="summary.json">summary.json</a>{{if .HasLin}} · <a id="linearizability" href="linearizability.html">linearizability.html</a> (porcupine's view of the non-linearizable key){{end}}</p>
</div></div>
{{if .Replay}}<h3>Replay this run</h3><pre id="replay">{{.Replay}}</pre>{{else if .ReplayNote}}<h3>Replay this run</h3><p class="small" id="replay-note">{{.ReplayNote}}</p>{{end}}

<h2 id="anomalies">Anomalies{{if .AnomalyTotal}} ({{.AnomalyTotal}}{{if lt (len .Anomalies) .AnomalyTotal}}, {{len .Anomalies}} listed{{end}}){{end}}</h2>
{{if .Anomalies}}<ol class="anomalies">{{range .Anomalies}}
<li class="anomaly-item" id="{{.ID}}" value="{{.N}}"><b>{{.Kind}}</b> at {{.When}} on <code>{{.Key}}</code>{{if .Clients}}, clients {{.Clients}}{{end}}{{if .AfterSwitch}}, after a master switch{{end}}: {{.Detail}}
<span class="small">{{if .Timeline}}[<a href="{{.Timeline}}">timeline</a>]{{end}}{{if .Lines}} [<a href="history.jsonl">history.jsonl</a> line{{if gt (len .Lines) 1}}s{{end}} {{range $i, $l := .Lines}}{{if $i}}, {{end}}{{$l}}{{end}}]{{end}}</span></li>{{end}}
</ol>{{else}}<p>No checker found an anomaly: every hold of every key was alone, every release deleted its own lock.</p>{{end}}

<h2 id="timeline">Timeline</h2>
<div class="legend small">
<span><i class="sw" style="background:#0072b2;height:6px"></i>hold (acquire returned → release called)</span>
<span><i class="sw" style="background:#b9e0f5"></i>lease (acquire sent → TTL ran out or key deleted)</span>
<span><i class="sw" style="background:#e69f00;height:6px"></i>hold past its lease</span>
<span><i class="sw" style="border:1px dashed #cc79a7"></i>unknown outcome</span>
<span><i class="sw" style="background:rgba(240,228,66,.5)"></i>fault active (F1, F2…: rows of the fault table)</span>
<span><i class="sw" style="border-left:2px dashed #009e73;width:4px"></i>master switch</span>
<span><i class="sw" style="background:rgba(213,94,0,.25);border:1px solid #d55e00"></i>anomaly</span>
</div>
{{range .Keys}}<section class="key" id="{{.ID}}">
<h3>Key <code>{{.Key}}</code>: whole run <span class="muted small">({{.Holds}} holds; dashed boxes are drawn in detail below, click one)</span></h3>
{{.Overview}}
{{range .Windows}}<div class="window{{if .Anomalies}} has-anomaly{{end}}" id="{{.ID}}"{{if .First}} data-first="1"{{end}}>
<h3>{{.Span}}: {{.Title}}</h3>
{{range .Notes}}<p class="small note"><a href="#{{.ID}}">#{{.N}}</a> <b>{{.Kind}}</b>: {{.Detail}}</p>{{end}}
{{.SVG}}{{if .More}}<p class="small">Also here: {{range .More}}<a href="#{{.ID}}">#{{.N}} {{.Kind}}</a> · {{end}}</p>{{end}}</div>{{end}}
</section>{{end}}
{{if .HiddenKeys}}<p class="muted">{{if .HiddenOver}}Over {{end}}{{.HiddenKeys}} more keys without anomalies are not drawn.</p>{{end}}

<h2 id="plots">Throughput and latency</h2>
{{range .Plots}}<div class="plot-head"><h3>{{.Title}}</h3><span class="legend small plot-legend" data-plot="{{.ID}}">{{range .Legend}}<span><i class="sw" style="{{.Style}}"></i>{{.Name}}</span>{{end}}</span></div>
{{.SVG}}{{end}}

<h2 id="faults">Faults</h2>
{{if .Faults}}<table id="fault-table"><tr><th></th><th>fault</th><th>target</th><th>from</th><th>to</th><th>length</th></tr>
{{range .Faults}}<tr class="fault-row" id="fault-{{.N}}"><td>F{{.N}}</td><td>{{.Fault}}</td><td>{{.Target}}</td><td>{{.Start}}</td><td>{{.End}}</td><td>{{.Length}}</td></tr>{{end}}</table>
{{if .HiddenFaults}}<p class="muted">{{.HiddenFaults}} more faults in history.jsonl.</p>{{end}}{{else}}<p>No fault was injected.</p>{{end}}
</main>
<script>addEventListener("DOMContentLoaded",function(){if(location.hash)return;var e=document.getElementById({{.FirstTarget}});if(e)e.scrollIntoView({block:"start"})});</script>
</body></html>
`

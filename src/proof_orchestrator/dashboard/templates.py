"""Page templates (Jinja2, autoescaped: statements with ``<`` and ``&`` are shown as text)."""

from __future__ import annotations

from jinja2 import DictLoader, Environment, select_autoescape

__all__ = ["environment"]

_BASE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>{{ title }} · orch</title>
<style>
body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #222; }
nav a { margin-right: 1rem; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; }
td, th { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; }
pre { background: #f6f6f6; padding: 0.5rem; overflow-x: auto; }
.chart { display: inline-block; vertical-align: top; width: 580px; max-width: 100%; border: 1px solid #ddd; margin: 0.5rem 0.75rem 0.75rem 0; }
.chart-empty { padding: 0.5rem; width: 564px; }
#live .live-run { border: 1px solid #9bc; padding: 0.5rem 1rem; margin: 0.5rem 0; }
#live .live-run.dead { border-color: #c66; background: #fff4f4; }
#live .badge { font-weight: bold; } #live .dead .badge { color: #a33; } #live .alive .badge { color: #174; }
.proved { color: #174; } .failed { color: #a33; } .open { color: #a60; } .skipped { color: #888; }
.cards span { display: inline-block; border: 1px solid #ccc; padding: 0.5rem 1rem; margin-right: 0.5rem; }
</style>{% block head %}{% endblock %}</head>
<body>
<nav><a href="/">Overview</a><a href="/goals">Goals</a><a href="/runs">Runs</a><a href="/marketplace">Market</a>
<a href="/docs">API</a><a href="/metrics">Metrics</a></nav>
<h1>{{ title }}</h1>
{% block body %}{% endblock %}
</body></html>
"""

_OVERVIEW = """{% extends "base.html" %}
{% block head %}<script src="/static/plotly.min.js"></script>{% endblock %}
{% block body %}
<div class="cards">
<span>holes <b id="total">{{ stats.total }}</b></span>
<span>proved <b id="proved">{{ stats.proved }}</b></span>
<span>closed <b id="closed">{{ stats.closed }}</b></span>
<span title="proved, but resting on other holes still open">modulo holes <b id="modulo">{{ stats.modulo }}</b></span>
<span>open <b id="open">{{ stats.open }}</b></span>
<span title="proofs that no longer check (orch repair, orch bg)">broken <b id="broken" class="failed">{{ repairs.broken }}</b></span>
<span title="broken proofs repaired and verified">repaired <b id="repaired" class="proved">{{ repairs.repaired }}</b></span>
<span>CPU <b id="cpu">{{ "%.1f"|format(stats.cpu_seconds) }}</b> s</span>
<span>model spend <b id="llm-cost">${{ "%.4f"|format(stats.llm.cost_usd) }}</b> ({{ stats.llm.tokens_in + stats.llm.tokens_out }} tokens)</span>
</div>
<h2>Running now</h2>
<div id="live" data-source="none" data-root="{{ root }}"><p id="live-none">Waiting for the live state…</p></div>
<h2>Charts</h2>
<div id="charts">{{ charts.solved|safe }}{{ charts.cpu|safe }}{{ charts.strategy|safe }}{{ charts.cost|safe }}
{{ charts.memory|safe }}{{ charts.queue|safe }}</div>
{% if repair_rows %}<h2>Broken proofs</h2>
{% set still = repair_rows|selectattr("status", "equalto", "broken")|list %}{% set fixed = repair_rows|selectattr("status", "equalto", "repaired")|list %}
{% if still %}<table id="broken-proofs"><tr><th>lemma</th><th>file</th><th>line</th><th>cause (kind, failing sentence, error)</th><th>old proof</th></tr>
{% for r in still %}<tr class="broken-row"><td><a href="/goals/{{ r.id }}">{{ r.name }}</a></td><td title="{{ r.file }}">{{ relative(r.file) }}</td><td>{{ r.line }}</td>
<td class="failed cause">{{ r.cause }}</td><td><code>{{ r.old }}</code></td></tr>{% endfor %}
</table>{% endif %}
{% if fixed %}<h3>Repaired</h3><table id="repaired-proofs"><tr><th>lemma</th><th>file</th><th>line</th><th>cause</th><th>old proof</th><th>new proof</th><th>by</th></tr>
{% for r in fixed %}<tr class="repaired-row"><td><a href="/goals/{{ r.id }}">{{ r.name }}</a></td><td title="{{ r.file }}">{{ relative(r.file) }}</td><td>{{ r.line }}</td>
<td class="cause">{{ r.cause }}</td><td><code>{{ r.old }}</code></td><td class="proved new"><code>{{ r.new }}</code></td><td>{{ r.strategy }}</td></tr>{% endfor %}
</table>{% endif %}{% endif %}
<h2>Files</h2>
<table id="files"><tr><th>file</th><th>holes</th><th>proved</th><th>open</th></tr>
{% for f in files %}<tr><td title="{{ f.file }}">{{ relative(f.file) }}</td><td>{{ f.total }}</td><td>{{ f.proved }}</td><td>{{ f.open }}</td></tr>{% endfor %}
</table>
<h2>Strategies</h2>
<table id="strategies"><tr><th>strategy</th><th>attempts</th><th>proved</th><th>win rate</th><th>CPU s</th><th>CPU s / proof</th><th>skipped</th></tr>
{% for s in strategies %}<tr><td>{{ s.strategy }}</td><td>{{ s.attempts }}</td><td>{{ s.proved }}</td>
<td>{{ "%.0f%%"|format(100 * s.proved / s.attempts if s.attempts else 0) }}</td><td>{{ "%.1f"|format(s.cpu_seconds) }}</td>
<td>{{ "%.2f"|format(s.cpu_seconds / s.proved) if s.proved else "–" }}</td>
<td class="skipped" title="{{ s.skipped_reason or '' }}">{{ s.skipped or "" }}</td></tr>{% endfor %}
</table>
{% set skipping = strategies|selectattr("skipped")|list %}{% if skipping %}
<p id="skipped">Skipped: the strategy cannot run there, so these are not attempts (nor in the CPU figures).</p>
<ul id="skipped-reasons">{% for s in skipping %}<li><b>{{ s.strategy }}</b> ×{{ s.skipped }}: {{ s.skipped_reason }}</li>{% endfor %}</ul>
{% endif %}
<script>
// live counts: poll the JSON API (no library needed)
async function refresh() {
  const r = await fetch("/api/stats" + location.search);
  if (!r.ok) return;
  const s = await r.json();
  for (const k of ["total", "proved", "closed", "modulo", "open"]) document.getElementById(k).textContent = s.holes[k];
  for (const k of ["broken", "repaired"]) document.getElementById(k).textContent = s.repairs[k];
  document.getElementById("cpu").textContent = s.cpu_seconds.toFixed(1);
}
setInterval(refresh, 3000);

// the live panel: server-sent events from /api/live/stream, polling /api/live without them
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = text;
  return e;
}
function rel(path) {
  const root = document.getElementById("live").dataset.root;
  return root && path.startsWith(root + "/") ? path.slice(root.length + 1) : path;
}
function seconds(v) { return v === null || v === undefined ? "–" : v.toFixed(1) + " s"; }
function percent(v) { return v === null || v === undefined ? "–" : (100 * v).toFixed(0) + " %"; }
function eta(v) {
  if (v === null || v === undefined) return "–";
  const m = Math.floor(v / 60), s = Math.round(v % 60);
  return m ? m + " min " + s + " s" : s + " s";
}
function renderLive(data) {
  const box = document.getElementById("live");
  box.replaceChildren();
  if (!data.runs.length) { box.append(el("p", "", "No command is running.")); box.lastChild.id = "live-none"; return; }
  for (const run of data.runs) {
    const st = run.state, goals = st.goals || {total: 0, done: 0, proved: 0}, cpu = st.cpu || {};
    const sec = el("section", "live-run " + (run.dead ? "dead" : "alive"));
    sec.dataset.runId = run.run_id;
    const head = el("p");
    head.append(el("span", "badge", run.dead ? "DEAD" : "running"), " run " + run.run_id + " · orch " + run.command +
      (st.executor ? " (" + st.executor + ")" : "") + " · heartbeat " + run.heartbeat_age_seconds.toFixed(1) + " s ago" +
      (run.dead ? " (no heartbeat for more than " + data.stale_after_seconds + " s: the process died)" : ""));
    sec.append(head);
    const cards = el("div", "cards");
    const card = (label, cls, value) => { const c = el("span"); c.append(label + " ", el("b", cls, value)); cards.append(c); };
    card("goals done", "live-done", goals.done); card("of", "live-total", goals.total);
    card("proved", "live-proved", goals.proved); card("queue", "live-queue", st.queue);
    card("CPU share", "live-share", percent(cpu.measured)); card("target", "live-target", percent(cpu.target));
    card("ETA", "live-eta", eta(st.eta_seconds));
    sec.append(cards);
    const table = el("table", "live-slots");
    const hr = el("tr");
    for (const h of ["goal", "file", "strategy", "budget", "CPU so far", "running for"]) hr.append(el("th", "", h));
    table.append(hr);
    for (const s of st.slots || []) {
      const tr = el("tr", "live-slot");
      tr.append(el("td", "slot-goal", s.goal), el("td", "slot-file", rel(s.file)),
        el("td", "slot-strategy", s.strategy), el("td", "", s.budget_seconds ? seconds(s.budget_seconds) : "–"),
        el("td", "slot-cpu", seconds(s.cpu_seconds)), el("td", "", seconds(s.elapsed_seconds)));
      tr.lastChild.previousSibling.title = s.cpu_seconds === null ? "known when the attempt ends" : "";
      table.append(tr);
    }
    if (!(st.slots || []).length) { const tr = el("tr"); const td = el("td", "", "no slot busy"); td.colSpan = 6; tr.append(td); table.append(tr); }
    sec.append(table);
    box.append(sec);
  }
}
// the CPU-share and memory charts follow a running command: redrawn from its trace
let chartsAt = 0, wasRunning = false, chartsBusy = false;
async function refreshCharts(data) {
  const running = data.runs.some(run => !run.dead);
  if (!running && !wasRunning) return;
  const ended = wasRunning && !running;
  wasRunning = running;
  if (chartsBusy || (!ended && Date.now() - chartsAt < 2000)) return;
  chartsBusy = true;
  chartsAt = Date.now();
  try {
    const r = await fetch("/api/live/charts" + location.search);
    if (!r.ok) return;
    const charts = await r.json();
    for (const [key, fig] of Object.entries(charts.figures)) {
      const div = document.getElementById("chart-" + key);
      if (!fig || !div) continue;
      if (div.classList.contains("chart-empty")) {
        div.replaceChildren();
        div.classList.remove("chart-empty");
      }
      div.dataset.live = charts.running ? "running" : "finished";
      Plotly.react(div, fig.data, fig.layout, {displaylogo: false, responsive: true});
    }
  } finally {
    chartsBusy = false;
  }
}
function onLive(data) { renderLive(data); refreshCharts(data); }
async function pollLive() {
  const r = await fetch("/api/live" + location.search);
  if (r.ok) onLive(await r.json());
}
if (window.EventSource) {
  const stream = new EventSource("/api/live/stream" + location.search);
  stream.addEventListener("live", e => { document.getElementById("live").dataset.source = "sse"; onLive(JSON.parse(e.data)); });
} else {
  pollLive();
  setInterval(pollLive, 1000);
}
</script>
{% endblock %}"""

_GOALS = """{% extends "base.html" %}{% block body %}
<form id="filter" method="get">
status <select name="status" id="status-filter"><option value="">any</option>
{% for s in ["proved", "open", "failed", "rejected", "error", "broken", "repaired"] %}<option value="{{ s }}" {% if s == status %}selected{% endif %}>{{ s }}</option>{% endfor %}
</select>
file <input name="file" value="{{ file or '' }}">
strategy <input name="strategy" value="{{ strategy or '' }}">
<button type="submit" id="apply">filter</button></form>
<p><span id="count">{{ goals|length }}</span> goals</p>
<table id="goals"><tr><th>lemma</th><th>file</th><th>line</th><th>status</th><th>strategy</th><th>attempts</th></tr>
{% for g in goals %}<tr class="goal-row" data-status="{{ g.status }}">
<td><a href="/goals/{{ g.id }}">{{ g.name }}</a></td><td title="{{ g.file }}">{{ relative(g.file) }}</td><td>{{ g.line }}</td>
<td class="{{ g.status }}">{{ g.status }}{% if g.id in modulo %} <span class="open modulo" title="closed modulo holes still open">(uses {{ modulo[g.id].open|join(", ") }})</span>{% endif %}</td><td>{{ g.strategy }}</td><td>{{ g.attempts }}</td></tr>{% endfor %}
</table>{% endblock %}"""

_GOAL = """{% extends "base.html" %}{% block body %}
<p><span title="{{ goal.file }}">{{ relative(goal.file) }}</span>:{{ goal.line }} · status <b class="{{ goal.status }}">{{ goal.status }}</b></p>
<h2>Statement</h2><pre id="statement">{{ goal.statement }}</pre>
{% if goal.proof %}<h2>Verified proof ({{ goal.proof.strategy }})</h2>
{% if goal.proof.open_holes %}<p id="modulo">Closed modulo holes still open: uses {{ goal.proof.open_holes|join(", ") }}{% if goal.proof.uses_holes != goal.proof.open_holes %} (found using {{ goal.proof.uses_holes|join(", ") }}){% endif %}. It becomes closed once they are proved.</p>
{% elif goal.proof.uses_holes %}<p id="modulo">Closed: found using {{ goal.proof.uses_holes|join(", ") }}, since proved.</p>{% endif %}
<pre id="proof">{{ goal.proof.script }}</pre>
<h3>Change to the file</h3><pre id="diff">{{ goal.proof.diff }}</pre>{% else %}<p id="no-proof">No verified proof yet.</p>{% endif %}
<h2>Attempts</h2>
<table id="attempts"><tr><th>strategy</th><th>outcome</th><th>tactic</th><th>budget s</th><th>CPU s</th><th>wall s</th><th>when</th></tr>
{% for a in goal.attempts %}<tr class="attempt-{{ a.outcome }}"><td>{{ a.strategy }}</td><td class="{{ a.outcome }}">{{ a.outcome }}</td>
<td>{% if a.outcome == "skipped" %}<i>cannot run here: {{ a.message }}</i>{% elif a.strategy == "detect" %}<i class="cause">{{ a.message }}</i><br>old proof: <code>{{ a.tactic }}</code>{% else %}<code>{{ a.tactic }}</code>{% endif %}</td>
<td>{{ a.budget_seconds }}</td><td>{{ "%.3f"|format(a.cpu_seconds) }}</td><td>{{ "%.3f"|format(a.wall_seconds) }}</td><td>{{ a.created_at }}</td></tr>{% endfor %}
</table>{% endblock %}"""

_RUNS = """{% extends "base.html" %}{% block body %}
<h2>Runs</h2>
<table id="runs"><tr><th>id</th><th>command</th><th>status</th><th>started</th><th>proved / goals</th><th>CPU s</th><th>wall s</th></tr>
{% for r in runs %}<tr><td>{{ r.id }}</td><td>{{ r.command }}</td><td>{{ r.status }}</td><td>{{ r.started_at }}</td>
<td>{{ r.summary.proved }} / {{ r.summary.goals }}</td><td>{{ r.summary.cpu_seconds }}</td><td>{{ r.summary.wall_seconds }}</td></tr>{% endfor %}
</table>
<h2>Benchmark results</h2>
<table id="benchmarks"><tr><th>result</th><th>solved</th><th>rate</th><th>wall s</th><th>search CPU s</th><th>per strategy</th></tr>
{% for b in benchmarks %}<tr><td>{{ b.name }}</td><td>{{ b.solved }} / {{ b.lemmas }}</td><td>{{ "%.1f%%"|format(100 * b.rate) }}</td>
<td>{{ b.wall }}</td><td>{{ b.cpu }}</td><td>{{ b.strategies }}</td></tr>{% endfor %}
</table>{% endblock %}"""

_MARKET = """{% extends "base.html" %}{% block body %}
{% if tickets %}<table id="tickets"><tr><th>#</th><th>state</th><th>helper</th><th>statement</th>
<th>for goal</th><th>claimed by</th><th>lease until</th><th>proof</th></tr>
{% for t in tickets %}<tr class="ticket-{{ t.state }}"><td>{{ t.id }}</td><td>{{ t.state }}</td>
<td>{{ t.name }}</td><td><code>{{ t.statement }}</code></td>
<td>{% if t.parent_goal_id %}<a href="/goals/{{ t.parent_goal_id }}">{{ t.parent_goal_id }}</a>{% endif %}</td>
<td>{{ t.claimed_by or "" }}</td><td>{{ t.lease_until or "" }}</td>
<td><code>{{ t.proof or "" }}</code></td></tr>{% endfor %}</table>
{% else %}<p id="market-empty">No helper-lemma tickets yet (`orch fill --profile 2` publishes them).</p>
{% endif %}{% endblock %}"""

_FILE = (
    """{% extends "base.html" %}{% block body %}<pre id="source">{{ text }}</pre>{% endblock %}"""
)


def environment() -> Environment:
    return Environment(
        loader=DictLoader(
            {
                "base.html": _BASE,
                "overview.html": _OVERVIEW,
                "goals.html": _GOALS,
                "goal.html": _GOAL,
                "runs.html": _RUNS,
                "market.html": _MARKET,
                "file.html": _FILE,
            }
        ),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )

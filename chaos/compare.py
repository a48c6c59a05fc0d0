"""compare.html: runs of different brokers under the same seed, side by side, one column each
(`kafkaref chaos compare`). Row by row: the verdict, the anomalies, liveness (chaos/liveness.py),
the fault windows as each broker met them, then the latency, throughput and lag plots of
report.html with their fault windows shaded. Self-contained like report.html (inline CSS and SVG,
no script), and each column links to its run's own report.html for the examples.
"""

from __future__ import annotations

import json
import os
from html import escape
from pathlib import Path

from kafkaref.chaos import report as single
from kafkaref.chaos.liveness import measure, summarise
from kafkaref.chaos.report_data import ReportData, collect
from kafkaref.chaos.report_svg import duration, fault_colour
from kafkaref.history.format import HistoryError

_CSS = single._CSS + """
body{max-width:1800px} .side{display:grid;gap:24px;grid-template-columns:repeat(var(--n),1fr)}
.side svg{width:100%;height:auto} .side>div{min-width:0} .side h2{font-size:17px}
"""


def write_comparison(out: str | os.PathLike, run_dirs: list[str | os.PathLike]) -> Path:
    """Write out (compare.html) from the run directories (report.json and history each)."""
    columns = [_column(Path(run_dir), Path(out).parent) for run_dir in run_dirs]
    rows = [f'<div class="side" style="--n:{len(columns)}">'
            + "".join(f"<div>{column[i]}</div>" for column in columns) + "</div>"
            for i in range(len(columns[0]))]
    page = ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            f"<title>kafkaref comparison</title><style>{_CSS}</style></head><body>"
            "<h1>Same seed, same faults, same workload: side by side</h1>"
            + "".join(rows) + '<p class="muted">Written by kafkaref (chaos/compare.py).</p>'
            "</body></html>\n")
    path = Path(out)
    path.write_text(page, encoding="utf-8")
    return path


def _column(run_dir: Path, page_dir: Path) -> list[str]:
    """The sections of one run, in the page's row order."""
    report = json.loads((run_dir / "report.json").read_text())
    run = report.get("run", {})
    history = run_dir / "history"
    try:
        data = collect(history, report)
        liveness = summarise(measure(history))
    except (HistoryError, OSError, ValueError) as error:
        data, liveness = ReportData(errors=[str(error)]), []
    colours = fault_colour([fault.f for fault in data.faults])
    link = os.path.relpath(run_dir / "report.html", page_dir)
    title = (f"<h2>{escape(run.get('broker', '?'))} <span class=muted>seed "
             f"{escape(str(run.get('seed', '?')))}</span></h2>"
             f'<p><a href="{escape(link)}">its report.html</a> (examples, configuration)</p>')
    return [title + single._header(report, run_dir.name), single._anomaly_table(report),
            _liveness_table(liveness), _windows_table(data, run),
            *single._latency_plots(data, colours)[:1],
            single._throughput_plot(data, colours), single._lag_plot(data, colours)]


def _liveness_table(summaries) -> str:
    rows = "".join(
        f"<tr><td>{escape(s.kind)}</td><td class=n>{s.events}</td><td class=n>{s.censored}</td>"
        + "".join(f"<td class=n>{'-' if v is None else f'{v:,.0f}'}</td>"
                  for v in (s.median_ms, s.p90_ms, s.max_ms)) + "</tr>" for s in summaries)
    return ("<h2>Liveness: after the fault, until every partition took a write</h2>"
            "<table><tr><th>from</th><th>events</th><th>censored</th><th>median ms</th>"
            f"<th>p90 ms</th><th>max ms</th></tr>{rows}</table>")


def _windows_table(data: ReportData, run: dict) -> str:
    rows = "".join(
        f"<tr><td>{escape(f.f)}</td><td>{escape(duration(f.start - data.t_min))}</td>"
        f"<td>{'never' if f.end is None else escape(duration(f.end - f.start))}</td>"
        f"<td><code>{escape(f.detail[:90])}</code></td></tr>" for f in data.faults)
    skipped = run.get("skipped") or {}
    note = ("<p class=muted>skipped: " + escape(", ".join(f"{k} ({v})" for k, v in
                                                          skipped.items())) + "</p>"
            if skipped else "")
    return ("<h2>Fault windows</h2><table><tr><th>fault</th><th>from</th><th>lasted</th>"
            f"<th>target</th></tr>{rows}</table>{note}")

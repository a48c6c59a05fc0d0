"""report.html: a checked run as one self-contained page (inline CSS and SVG, no script, no
network), readable from file://.

Top: the verdict and the configuration judged. Then the anomaly table, the plots Jepsen draws
(latency of every op over time by f and outcome on a log scale, throughput, realtime lag of
polls, fault windows shaded on each), and per anomaly its examples, each linked to a table of
the ops around it. The data comes from report_data.py in bounded memory at any history size.

`kafkaref report RUN_DIR` regenerates it (`kafkaref check PATH --html` writes it after a check;
commands/report.py).
"""

from __future__ import annotations

import json
import os
from html import escape
from pathlib import Path

from kafkaref.chaos.report_data import ReportData, Window, collect, meta_summary
from kafkaref.chaos.report_svg import OUTCOME_COLOURS, SERIES_COLOURS, Plot, duration, fault_colour
from kafkaref.history.format import HistoryError
from kafkaref.history.store import read_meta

LATENCY_PANELS = 3  # client fs with a latency panel of their own; the rest share one
PANEL_OPS_MIN = 50  # fewer completions than this share the "other ops" panel

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1120px;
color:#222;padding:0 16px}
h1{font-size:24px;margin:0 0 4px} h2{font-size:19px;margin:28px 0 8px;border-bottom:1px solid #ddd}
h3{font-size:16px;margin:18px 0 6px}
.verdict{display:inline-block;padding:6px 14px;border-radius:6px;font-weight:700;font-size:18px;
color:#fff} .valid{background:#2e8b57} .invalid{background:#c0392b} .unknown{background:#d68910}
table{border-collapse:collapse;margin:6px 0 12px} td,th{border:1px solid #ddd;padding:3px 8px;
text-align:left;vertical-align:top} th{background:#f4f4f4} td.n{text-align:right}
tr.bad td{background:#fdecea} tr.hit td{background:#fff3c4;font-weight:600}
.muted{color:#777} code{font-size:12px} figure{margin:8px 0 18px} figcaption{font-weight:600}
svg text{font:11px system-ui,sans-serif;fill:#333} svg .axis{fill:#666}
.ops td{font:12px ui-monospace,monospace;white-space:nowrap} .ops td.rec{white-space:normal}
.row{display:flex;gap:28px;align-items:flex-start;flex-wrap:wrap} .row>div{max-width:420px}
.note{background:#f6f8fa;border-left:3px solid #999;padding:6px 10px}
"""


def write_report(run_dir: str | os.PathLike, history_dir: str | os.PathLike,
                 report_json_path: str | os.PathLike) -> Path:
    """Write run_dir/report.html from report.json and the history; returns its path."""
    report = json.loads(Path(report_json_path).read_text())
    try:
        meta = read_meta(history_dir)
    except HistoryError as error:
        meta, data = {}, ReportData(errors=[str(error)])
    else:
        data = collect(history_dir, report)
    page = render(report, meta, data, title=Path(run_dir).resolve().name)
    out = Path(run_dir) / "report.html"
    partial = out.with_name(".report.html.partial")
    partial.write_text(page, encoding="utf-8")
    partial.replace(out)
    return out


def render(report: dict, meta: dict, data: ReportData, title: str = "") -> str:
    sections = [_header(report, title), _configuration(report, meta), _anomaly_table(report),
                _plots(data, report), _examples(report, data), _footer(data)]
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            f"<title>kafkaref report {escape(title)}</title><style>{_CSS}</style></head><body>"
            + "".join(sections) + "</body></html>\n")


def _verdict_word(valid) -> tuple[str, str]:
    if valid is True:
        return "valid", "valid"
    if valid is False:
        return "invalid", "invalid"
    return "unknown", "unknown"


def _header(report: dict, title: str) -> str:
    word, css = _verdict_word(report.get("valid"))
    bad = [name for name, entry in report.get("anomalies", {}).items()
           if entry.get("count") and not entry.get("allowed")]
    why = (f"anomalies the configuration disallows: {', '.join(bad)}" if bad else
           "no anomaly the configuration disallows" if word == "valid" else "")
    error = (f'<p class="note"><b>The checker could not decide:</b> '
             f'{escape(str(report["error"]))}</p>' if report.get("error") else "")
    return (f"<h1>kafkaref run report <span class=muted>{escape(title)}</span></h1>"
            f'<p><span id="verdict" class="verdict {css}">{word}</span> '
            f"{escape(why)}</p>{error}")


def _kv_table(rows: dict, table_id: str) -> str:
    body = "".join(f"<tr><th>{escape(str(k))}</th><td>{escape(str(v))}</td></tr>"
                   for k, v in rows.items())
    return f'<table id="{table_id}">{body}</table>'


def _configuration(report: dict, meta: dict) -> str:
    config = report.get("config", {})
    info = report.get("info", {})
    judged = {**config, "allowed anomalies": ", ".join(report.get("allowed", ())) or "none"}
    sizes = {"ops": f"{info.get('ops', 0):,}", "records": f"{info.get('records', 0):,}"}
    by_f: dict = {}
    for key, n in info.get("ops_by_f_type", {}).items():
        f, _, type_ = key.partition(":")
        by_f.setdefault(f, {})[type_] = n
    types = ("invoke", "ok", "info", "fail")
    counts = "".join(f"<tr><td>{escape(f)}</td>" + "".join(
        f"<td class=n>{row.get(t, 0):,}</td>" for t in types) + "</tr>"
        for f, row in sorted(by_f.items(), key=lambda kv: -kv[1].get("invoke", 0)))
    return ('<h2>Configuration</h2><div class="row"><div><h3>judged</h3>'
            + _kv_table(judged, "config") + "</div><div><h3>run</h3>"
            + _kv_table({**meta_summary(meta), **sizes}, "meta") + "</div><div>"
            + '<h3>ops by f and outcome</h3><table id="ops-by-f"><tr><th>f</th>'
            + "".join(f"<th>{t}</th>" for t in types) + f"</tr>{counts}</table></div></div>")


def _anomaly_table(report: dict) -> str:
    rows = []
    for name, entry in report.get("anomalies", {}).items():
        count = entry.get("count", 0)
        cls = ' class="bad"' if count and not entry.get("allowed") else ""
        link = f'<a href="#anomaly-{name}">{escape(name)}</a>' if count else escape(name)
        rows.append(f"<tr{cls}><td>{link}</td><td class=n>{count:,}</td>"
                    f"<td>{'yes' if entry.get('allowed') else 'no'}</td>"
                    f"<td>{escape(entry.get('meaning', ''))}</td></tr>")
    return ('<h2>Anomalies</h2><table id="anomalies"><tr><th>anomaly</th><th>count</th>'
            "<th>allowed</th><th>meaning</th></tr>" + "".join(rows) + "</table>")


def _plots(data: ReportData, report: dict) -> str:
    colours = fault_colour([fault.f for fault in data.faults])
    parts = ["<h2>Plots</h2>"]
    if data.faults:
        parts.append(f"<p>{len(data.faults)} fault window(s) from the nemesis's ops, shaded on "
                     "every plot (hover for the target and times).</p>")
    else:
        parts.append('<p class="muted">No nemesis ops in this history: no fault windows.</p>')
    parts += _latency_plots(data, colours)
    parts.append(_throughput_plot(data, colours))
    parts.append(_lag_plot(data, colours))
    return "".join(parts)


def _panels(data: ReportData) -> list[tuple[str, list[str]]]:
    totals: dict = {}
    for (f, _type), n in data.latency_counts.items():
        totals[f] = totals.get(f, 0) + n
    ordered = sorted(totals, key=lambda f: (-totals[f], f))
    own = [f for f in ordered if totals[f] >= PANEL_OPS_MIN][:LATENCY_PANELS]
    panels = [(f, [f]) for f in own]
    rest = [f for f in ordered if f not in own]
    if rest:
        panels.append(("other" if own else "all", rest))
    return panels


def _latency_plots(data: ReportData, colours: dict) -> list[str]:
    out = []
    for title, fs in _panels(data):
        series = {k: v for k, v in data.latency.items() if k[0] in fs}
        values = [lat for points in series.values() for _t, lat in points]
        if not values:
            continue
        positive = [v for v in values if v > 0] or [1]
        plot = Plot(f"Latency of {title} ops (log scale), by outcome", data.t_min, data.t_max,
                    min(positive), max(positive), log_y=True, y_label="latency")
        plot.faults(data.faults, colours)
        for (f, type_), points in sorted(series.items(), key=lambda kv: kv[0][1] != "ok"):
            shown = data.latency_counts.get((f, type_), len(points))
            shape = "circle" if type_ == "ok" else "triangle"
            if len(fs) > 1:  # a shared panel: colour tells the f, the shape the outcome
                colour = SERIES_COLOURS[fs.index(f) % len(SERIES_COLOURS)]
                plot.points(points, colour, f"{f} {type_} ({shown:,})", shape)
            else:
                plot.points(points, OUTCOME_COLOURS.get(type_, "#555"), f"{type_} ({shown:,})",
                            shape)
        out.append(plot.svg())
    if not out:
        out.append('<p class="muted">No completed client ops: no latency plot.</p>')
    return out


def _throughput_plot(data: ReportData, colours: dict) -> str:
    if not data.throughput:
        return '<p class="muted">No completed ops: no throughput plot.</p>'
    per_second = 1e9 / data.bucket_ns
    rates = {k: [c * per_second for c in v] for k, v in data.throughput.items()}
    top = max(max(v) for v in rates.values())
    plot = Plot("Throughput: completions per second, by f and outcome", data.t_min, data.t_max,
                0, top * 1.05, y_label="ops / s", y_format=lambda v: f"{v:,.3g}")
    plot.faults(data.faults, colours)
    keys = sorted(rates, key=lambda k: (-sum(rates[k]), k))
    for n, key in enumerate(keys[: len(SERIES_COLOURS)]):
        times = [data.t_min + (i + 0.5) * data.bucket_ns for i in range(len(rates[key]))]
        plot.line(list(zip(times, rates[key], strict=True)), SERIES_COLOURS[n],
                  f"{key[0]} {key[1]}")
    return plot.svg()


def _lag_plot(data: ReportData, colours: dict) -> str:
    if not data.lag:
        return '<p class="muted">No polls with records: no realtime lag plot.</p>'
    top = max(lag for _t, lag in data.lag)
    worst = [m for m in data.lag_max if m is not None]
    top = max([top, *worst]) or 1
    plot = Plot("Realtime lag of polls: how stale each poll's view of its partition was",
                data.t_min, data.t_max, 0, top * 1.05, y_label="lag")
    plot.faults(data.faults, colours)
    plot.points(data.lag, "#2b7bd3", f"polls ({data.polls_measured:,})")
    times = [data.t_min + (i + 0.5) * data.bucket_ns for i in range(len(data.lag_max))]
    plot.line(list(zip(times, data.lag_max, strict=True)), "#d62d4b", "worst in interval")
    note = "" if data.lag_exact else (
        '<p class="muted">Lag is measured against offset buckets (long logs): an upper bound '
        "within one bucket of offsets.</p>")
    return plot.svg() + note


def _examples(report: dict, data: ReportData) -> str:
    parts = []
    for name, entry in report.get("anomalies", {}).items():
        if not entry.get("count"):
            continue
        examples = entry.get("examples", ())
        status = "allowed by the configuration" if entry.get("allowed") else "disallowed"
        parts.append(f'<h3 id="anomaly-{name}">{escape(name)}: {entry["count"]:,} '
                     f'({status})</h3><p>{escape(entry.get("meaning", ""))}. '
                     f"{len(examples)} example(s) below, each with the ops around it.</p>")
        for n, example in enumerate(examples):
            parts.append(_example(name, n, example, data.windows.get((name, n))))
    if not parts:
        return ""
    return "<h2>Anomaly examples</h2>" + "".join(parts)


def _example(name: str, n: int, example: dict, window: Window | None) -> str:
    anchor = f"ex-{name}-{n}"
    fields = ", ".join(f"{escape(k)}={escape(json.dumps(v))}" for k, v in example.items())
    if window is None or not window.rows:
        return f'<p id="{anchor}"><code>{fields}</code> <span class=muted>(no ops found)</span></p>'
    links = " ".join(f'<a href="#{anchor}-op{op}">op {op}</a>' for op in sorted(window.hits)
                     if any(row["index"] == op for row in window.rows))
    rows = []
    for row in window.rows:
        hit = row["index"] in window.hits
        records = "<br>".join(escape(text) for text in row["records"])
        rows.append(
            f'<tr id="{anchor}-op{row["index"]}"{" class=hit" if hit else ""}>'
            f'<td>{row["index"]}</td><td>{escape(duration(row["time"]))}</td>'
            f'<td>{row["process"]}</td><td>{escape(row["type"])}</td><td>{escape(row["f"])}</td>'
            f'<td>{"" if row["invoke_index"] is None else row["invoke_index"]}</td>'
            f'<td>{escape(row["error"] or "")}</td><td>{escape(clip(row["value"] or "", 80))}</td>'
            f'<td class=rec>{records}</td></tr>')
    more = '<p class="muted">(window cut short)</p>' if window.truncated else ""
    return (f'<div class="example" id="{anchor}"><p><b>#{n + 1}</b> <code>{fields}</code><br>'
            f"ops named: {links}</p>"
            '<table class="ops"><tr><th>index</th><th>time</th><th>process</th><th>type</th>'
            "<th>f</th><th>invoke</th><th>error</th><th>value</th><th>records</th></tr>"
            + "".join(rows) + f"</table>{more}</div>")


def _footer(data: ReportData) -> str:
    sampled = sum(len(v) for v in data.latency.values())
    total = sum(data.latency_counts.values())
    errors = "".join(f"<li>{escape(e)}</li>" for e in data.errors)
    problems = f'<div class="note"><b>Parts of the history could not be read:</b><ul>{errors}' \
               "</ul></div>" if errors else ""
    return (f'{problems}<p class="muted">Latency plots show {sampled:,} of {total:,} completions '
            f"(every k-th of each f and outcome); lag plot {len(data.lag):,} of "
            f"{data.polls_measured:,} polls (one point per poll and partition). Written by kafkaref (chaos/report.py).</p>")


def clip(text: str, width: int) -> str:
    """text cut to width characters, an ellipsis saying it was cut (tables, terminal lines)."""
    return text if len(text) <= width else text[:width - 1] + "…"

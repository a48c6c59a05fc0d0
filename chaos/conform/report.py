"""The three outputs of a conformance run: a terminal table, JUnit XML (any CI shows it) and an
HTML report card -- one row per check, one column per broker, so saved JSON results of several
brokers can be shown side by side."""

from __future__ import annotations

import html
import json
import os
import xml.etree.ElementTree as ET

from kafkaref.chaos.conform.catalogue import ERROR, FAIL, PASS, SKIP
from kafkaref.chaos.conform.runner import RunResult, versions_text
from kafkaref.chaos.report import clip

MARK = {PASS: "pass", FAIL: "FAIL", SKIP: "skip", ERROR: "could not run"}


def table(result: RunResult) -> str:
    width = max([len(o.name) for o in result.outcomes] + [5])
    lines = [f"conformance of {result.broker} ({result.bootstrap}), {result.started}"]
    if result.could_not_start:
        lines.append(f"could not start: {result.could_not_start}")
    lines.append(f"{'check':<{width}}  {'verdict':<13}  {'seconds':>7}  summary")
    for o in result.outcomes:
        summary = o.summary.replace("\n", " ")
        lines.append(f"{o.name:<{width}}  {MARK[o.status]:<13}  {o.duration_s:7.2f}  "
                     f"{clip(summary, 110)}")
    counts = {s: sum(o.status == s for o in result.outcomes) for s in MARK}
    lines.extend(f"versions sent at the {level} level: {versions_text(sent)}"
                 for level, sent in result.versions_exercised().items())
    lines.append(f"{counts[PASS]} passed, {counts[FAIL]} failed, {counts[SKIP]} skipped, "
                 f"{counts[ERROR]} could not run; exit {result.exit_code}")
    return "\n".join(lines)


def evidence_text(outcome) -> str:
    parts = []
    for e in outcome.evidence:
        parts.append(e.what)
        for label, value in (("request", e.request), ("response", e.response),
                             ("expected", e.expected)):
            if value:
                parts.append(f"  {label}: {value}")
    return "\n".join(parts)


def junit(result: RunResult) -> str:
    suite = ET.Element("testsuite", {
        "name": f"kafkaref conform {result.broker}", "tests": str(len(result.outcomes)),
        "failures": str(sum(o.status == FAIL for o in result.outcomes)),
        "errors": str(sum(o.status == ERROR for o in result.outcomes)),
        "skipped": str(sum(o.status == SKIP for o in result.outcomes)),
        "time": f"{sum(o.duration_s for o in result.outcomes):.3f}",
        "timestamp": result.started})
    for o in result.outcomes:
        case = ET.SubElement(suite, "testcase", {"classname": f"conform.{o.group}",
                                                 "name": o.name, "time": f"{o.duration_s:.3f}"})
        if o.status in (FAIL, ERROR):
            tag = "failure" if o.status == FAIL else "error"
            node = ET.SubElement(case, tag, {"message": o.summary[:500]})
            node.text = evidence_text(o)
        elif o.status == SKIP:
            ET.SubElement(case, "skipped", {"message": o.summary[:500]})
        ET.SubElement(case, "system-out").text = (
            f"behaviour: {o.behaviour}\nreference: {o.reference}\n{o.summary}")
    return ET.tostring(ET.ElementTree(suite).getroot(), encoding="unicode")


def save_json(result: RunResult, path: str) -> None:
    with open(path, "w") as f:
        json.dump(result.as_dict(), f, indent=1)


def load_json(path: str) -> RunResult:
    with open(path) as f:
        return RunResult.from_dict(json.load(f))


_STYLE = """
body { font-family: sans-serif; margin: 2em; }
table { border-collapse: collapse; }
td, th { border: 1px solid #ccc; padding: 4px 8px; vertical-align: top; font-size: 90%; }
th { background: #eee; }
.pass { background: #d8f5d8; } .fail { background: #f8d0d0; }
.skip { background: #eeeeee; } .error { background: #f8ecc0; }
details { max-width: 40em; } pre { white-space: pre-wrap; font-size: 85%; }
"""


def card(results: list[RunResult]) -> str:
    """One HTML page: a row per check (the union over results), a column per broker."""
    names, info = [], {}
    for result in results:
        for o in result.outcomes:
            if o.name not in info:
                names.append(o.name)
                info[o.name] = o
    out = ["<!DOCTYPE html><html><head><meta charset='utf-8'>",
           "<title>kafkaref conformance report card</title>",
           f"<style>{_STYLE}</style></head><body>",
           "<h1>kafkaref conformance report card</h1>", "<table><tr><th>check</th>"
           "<th>behaviour (reference)</th>"]
    for r in results:
        counts = {s: sum(o.status == s for o in r.outcomes) for s in MARK}
        out.append(f"<th>{html.escape(r.broker)}<br><small>{html.escape(r.started)}<br>"
                   f"{counts[PASS]} pass, {counts[FAIL]} fail, {counts[SKIP]} skip, "
                   f"{counts[ERROR]} could not run</small>"
                   f"{_versions_html(r.versions_exercised())}</th>")
    out.append("</tr>")
    for name in names:
        o = info[name]
        out.append(f"<tr><td><b>{html.escape(name)}</b><br><small>{html.escape(o.group)}"
                   f"</small></td><td>{html.escape(o.behaviour)}<br><small>"
                   f"{html.escape(o.reference)}</small></td>")
        for r in results:
            mine = next((x for x in r.outcomes if x.name == name), None)
            if mine is None:
                out.append("<td>not run</td>")
                continue
            detail = evidence_text(mine)
            evidence = (f"<details><summary>evidence</summary><pre>{html.escape(detail)}</pre>"
                        "</details>") if detail else ""
            out.append(f"<td class='{mine.status}'><b>{MARK[mine.status]}</b> "
                       f"({mine.duration_s:.1f} s)<br>{html.escape(mine.summary)}{evidence}"
                       f"{_versions_html(mine.versions)}</td>")
        out.append("</tr>")
    out.append("</table></body></html>")
    return "\n".join(out)


def _versions_html(levels: dict) -> str:
    """The versions sent at each level (lowest, highest, preferred), folded."""
    if not levels:
        return ""
    rows = "".join(f"<li>{html.escape(level)}: {html.escape(versions_text(sent))}</li>"
                   for level, sent in levels.items())
    return f"<details><summary>versions</summary><ul>{rows}</ul></details>"


def markdown(results: list[RunResult]) -> str:
    """The card as a Markdown table (a row per check, a column per broker)."""
    names = list(dict.fromkeys(o.name for r in results for o in r.outcomes))
    lines = ["| check | " + " | ".join(r.broker for r in results) + " |",
             "| --- | " + " | ".join("---" for _ in results) + " |"]
    for name in names:
        cells = []
        for r in results:
            mine = next((o for o in r.outcomes if o.name == name), None)
            cells.append("not run" if mine is None else MARK[mine.status])
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_report(result: RunResult, directory: str, compare: list[RunResult] = ()) -> dict:
    """DIR/results.json, DIR/junit.xml and DIR/report.html (this broker, then the compared)."""
    os.makedirs(directory, exist_ok=True)
    paths = {name: os.path.join(directory, name)
             for name in ("results.json", "junit.xml", "report.html")}
    save_json(result, paths["results.json"])
    with open(paths["junit.xml"], "w") as f:
        f.write(junit(result))
    with open(paths["report.html"], "w") as f:
        f.write(card([result, *compare]))
    with open(os.path.join(directory, "report.md"), "w") as f:
        f.write(markdown([result, *compare]))
    return paths

"""report.html: one self-contained page from a checked history. The default tests read its HTML
structure (verdict, configuration, anomaly links that land on op rows, plots with their points and
fault windows, no external reference, bounded size at scale); the opt-in browser test (marker
`browser`, `tox -e report-browser`) loads it in headless Debian Chromium from file:// and counts
what the browser actually rendered."""

import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pyarrow.compute as pc
import pytest
from click.testing import CliRunner

from kafkaref.chaos.report import write_report
from kafkaref.chaos.report_data import LATENCY_POINTS
from kafkaref.history.store import read_table
from kafkaref.properties.run_histories import simulated_run
from kafkaref.spark_checks import twin
from kafkaref.spark_checks.synth import SynthSpec, generate


class _Page(HTMLParser):
    """Tags with their attributes, ids, links and the text of the verdict."""

    def __init__(self, text: str):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.ids: set[str] = set()
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if "id" in attrs:
            assert attrs["id"] not in self.ids, f"duplicate id {attrs['id']}"
            self.ids.add(attrs["id"])

    def handle_data(self, data):
        self.text.append(data)

    def count(self, tag, **where) -> int:
        return sum(1 for t, a in self.tags
                   if t == tag and all(a.get(k) == v for k, v in where.items()))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A small simulated chaos run with one lost write, checked by the twin."""
    run = tmp_path_factory.mktemp("run")
    summary = simulated_run(run / "history", seed=3, seconds=4)
    result = twin.check(run / "history")
    (run / "report.json").write_text(result.dumps())
    write_report(run, run / "history", run / "report.json")
    return run, summary


def test_the_page_names_the_verdict_and_the_configuration(run_dir):
    run, _ = run_dir
    page = _Page((run / "report.html").read_text())
    assert page.count("span", id="verdict", **{"class": "verdict invalid"}) == 1
    assert {"config", "meta", "anomalies", "ops-by-f"} <= page.ids
    text = " ".join(page.text)
    assert "acks" in text and "lost_write" in text


def test_each_anomaly_links_to_examples_and_their_ops(run_dir):
    run, summary = run_dir
    page = _Page((run / "report.html").read_text())
    links = [a["href"] for t, a in page.tags if t == "a" and a.get("href", "").startswith("#")]
    assert links and all(link[1:] in page.ids for link in links)  # every anchor lands
    assert "#anomaly-lost_write" in links
    rows = [i for i in page.ids if re.fullmatch(r"ex-lost_write-0-op\d+", i)]
    assert rows, "the lost write's example has a window of op rows"
    assert page.count("tr", **{"class": "hit"}) >= 2
    assert f"= {summary['lost'][0]}" in (run / "report.html").read_text()


def test_the_plots_have_points_lines_and_fault_windows(run_dir):
    run, _ = run_dir
    page = _Page((run / "report.html").read_text())
    assert page.count("svg") >= 4  # latency (send, poll, other), throughput, lag
    assert page.count("circle") > 200
    assert page.count("path", **{"class": "line"}) >= 2
    assert page.count("rect", **{"class": "fault"}) == 3 * page.count("svg")
    assert "ok (" in " ".join(page.text) and "fault: kill" in " ".join(page.text)


def test_the_page_is_self_contained(run_dir):
    run, _ = run_dir
    text = (run / "report.html").read_text()
    page = _Page(text)
    assert not [a for t, a in page.tags if t in ("script", "link", "img", "iframe")]
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", text)


def test_a_large_history_gives_a_bounded_page(tmp_path):
    generate(SynthSpec(sends=60_000, partitions=4, producers=4, seed=5), tmp_path / "h")
    ops = read_table(tmp_path / "h", "ops")
    keys = pc.binary_join_element_wise(ops["f"], ops["type"], ":")
    counts = {k["values"]: k["counts"] for k in pc.value_counts(keys).to_pylist()}
    report = {"valid": True, "config": {}, "anomalies": {}, "info": {"ops_by_f_type": counts}}
    (tmp_path / "report.json").write_text(json.dumps(report))
    page = _Page(write_report(tmp_path, tmp_path / "h", tmp_path / "report.json").read_text())
    series = sum(1 for n in counts.values() if n) // 2 + 2
    assert page.count("circle") <= LATENCY_POINTS * series + 4000
    assert os.path.getsize(tmp_path / "report.html") < 3_000_000


def test_report_command_regenerates_the_page(run_dir, tmp_path):
    from kafkaref.commands.main import main

    run, _ = run_dir
    (run / "report.html").unlink()
    result = CliRunner().invoke(main, ["report", str(run)])
    assert result.exit_code == 0, result.output
    assert (run / "report.html").exists()
    missing = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert missing.exit_code == 2 and "no history" in missing.output


def test_an_unreadable_history_still_gives_a_page_saying_so(run_dir, tmp_path):
    run, _ = run_dir
    shutil.copytree(run / "history", tmp_path / "h")
    (tmp_path / "h" / "records" / "part-00000.parquet").write_bytes(b"garbage")
    text = write_report(tmp_path, tmp_path / "h", run / "report.json").read_text()
    assert "could not be read" in text and "records" in text


# --- in a real browser (opt-in) --------------------------------------------------------------


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        if path := shutil.which(name):
            return path
    pytest.fail("the browser test needs Debian's chromium: apt-get install -y chromium "
                "(as root); this test runs only when asked for (-m browser / tox -e report-browser)")


def _headless(tmp_path, *args) -> subprocess.CompletedProcess:
    profile = tmp_path / "chromium-profile"
    command = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
               "--no-first-run", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", f"--user-data-dir={profile}", "--hide-scrollbars", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)


@pytest.mark.browser
def test_chromium_renders_the_plots(run_dir, tmp_path):
    run, _ = run_dir
    url = (run / "report.html").resolve().as_uri()
    dom = _headless(tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    page = _Page(dom.stdout)
    assert page.count("svg") >= 4 and page.count("circle") > 200
    assert page.count("rect", **{"class": "fault"}) >= 3
    assert page.count("span", id="verdict", **{"class": "verdict invalid"}) == 1
    shot = tmp_path / "report.png"
    taken = _headless(tmp_path, "--window-size=1200,2400", f"--screenshot={shot}", url)
    assert taken.returncode == 0 and shot.exists(), taken.stderr[-2000:]
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 50_000  # a page, not a blank

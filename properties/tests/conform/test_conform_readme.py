"""The README's "judge a broker in three commands", run exactly as written there: the commands
are read from README.md and each given to `sh -c` in a fresh directory, with the virtualenv's
bin first on the PATH (as `. .venv/bin/activate` puts it). The conformance run must pass every
check, leave nothing of its own on the broker, and the cluster must be gone after the third."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import psutil

from kafkaref.chaos.peers import load_peer
from kafkaref.impl.client.connection import KafkaConnection, parse_address

README = Path(__file__).resolve().parents[3] / "README.md"
SECTION = "### Judge a broker in three commands"
SUCCESS = re.compile(r"^(\d+) passed, 0 failed, 0 skipped, 0 could not run; exit 0$", re.M)


def readme_commands() -> list[str]:
    """The lines of the first sh block after the section's heading, comments stripped."""
    text = README.read_text()
    block = text[text.index(SECTION):].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


def test_the_readme_names_three_commands_and_the_success_it_shows():
    commands = readme_commands()
    assert len(commands) == 3 and commands[0].endswith("&"), commands
    shown = README.read_text().split(SECTION, 1)[1]
    assert SUCCESS.search(shown), "the README's success line is not what conform prints"


def test_the_readmes_three_commands_judge_a_broker_as_written(tmp_path):
    start, judge, stop = readme_commands()
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"}
    # `sh -c "... &"` returns at once and leaves the cluster running: as in a terminal. The
    # wait keeps a handle on it, so a failed test still stops it.
    cluster = subprocess.Popen(["sh", "-c", f"{start}\nwait"], cwd=tmp_path, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        judged = subprocess.run(["sh", "-c", judge], cwd=tmp_path, env=env, capture_output=True,
                                text=True, timeout=1500)
        assert judged.returncode == 0, judged.stdout + judged.stderr[-3000:]
        assert SUCCESS.search(judged.stdout), judged.stdout
        assert re.search(r"^on the broker: removed \d+ topics and \d+ groups$", judged.stdout,
                         re.M), judged.stdout
        assert "[1/" in judged.stderr and "chaos_workload: checking the history" in \
            judged.stderr  # progress on stderr
        directory = tmp_path / start.split("--dir", 1)[1].split()[0]
        assert leftovers(load_peer(str(directory)).bootstrap) == ([], [])
        assert not list(tmp_path.glob("conform-chaos-*"))
        stopped = subprocess.run(["sh", "-c", stop], cwd=tmp_path, env=env,
                                 capture_output=True, text=True, timeout=120)
        assert stopped.returncode == 0, stopped.stderr
        assert cluster.wait(timeout=60) == 0
    finally:
        stop_group(cluster)


def leftovers(bootstrap: str) -> tuple[list[str], list[str]]:
    """Topics and groups on the cluster but the internal offsets topic."""
    topics, groups = [], []
    for address in bootstrap.split(","):
        with KafkaConnection(*parse_address(address)) as conn:
            topics += [t.name for t in conn.send(3, 8, {
                "topics": None, "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False}).topics]
            groups += [g.group_id for g in conn.send(16, 2, {}).groups]
    return sorted(set(topics) - {"__consumer_offsets"}), sorted(groups)


def stop_group(process: subprocess.Popen) -> None:
    """The shell and what it started (its own session), if still there."""
    try:
        members = [p for p in psutil.process_iter() if _session(p.pid) == process.pid]
    except psutil.Error:
        members = []
    for member in members:
        try:
            member.send_signal(signal.SIGTERM)
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(members, timeout=30)
    if process.poll() is None:
        process.kill()
        process.wait()


def _session(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None

"""`kafkaref conform` at two version levels (issue 23): each wire check runs at the lowest and
at the highest version of each API the broker advertises, and the reports say which; the checks
of what the newer versions carry (checks_versions.py) pass on kafkaref and are skipped, saying
why, on a broker lacking those versions. (Leader discovery needs followers: the full run on a
3-broker cluster, test_conform_kafkaref.py, holds it to a pass.)"""

from __future__ import annotations

import json

from kafkaref.chaos.conform import report
from kafkaref.chaos.conform.catalogue import HIGHEST, LOWEST, PASS, SKIP, load_catalogue
from kafkaref.chaos.conform.probe import Probe
from kafkaref.chaos.conform.runner import negotiate, run, run_check, select

WIRE = ("offset_commit_fetch", "list_offsets", "fetch_by_topic_id", "delete_records")


def test_wire_checks_run_at_both_levels_and_the_reports_say_which_versions(broker, tmp_path):
    advertised = negotiate(broker.address)
    result = run(broker.address, select(only=WIRE))
    verdicts = {o.name: o for o in result.outcomes}
    assert {n: o.status for n, o in verdicts.items()} == dict.fromkeys(WIRE, PASS), \
        report.table(result)
    commits = verdicts["offset_commit_fetch"]
    assert set(commits.versions) == {LOWEST, HIGHEST}
    low, high = advertised[8]  # OffsetCommit: v2 (by name) and v10 (by topic id)
    assert commits.versions[LOWEST]["OffsetCommit"] == [low]
    assert commits.versions[HIGHEST]["OffsetCommit"] == [high]
    assert commits.summary.startswith("lowest: pass") and "; highest: pass" in commits.summary
    assert set(verdicts["fetch_by_topic_id"].versions) == {HIGHEST}  # only new versions have it
    assert verdicts["fetch_by_topic_id"].versions[HIGHEST]["Fetch"] == [advertised[1][1]]
    assert verdicts["delete_records"].versions[LOWEST]["DeleteRecords"] == [advertised[21][0]]
    exercised = result.versions_exercised()
    assert exercised[LOWEST]["ListOffsets"] == [advertised[2][0]]
    assert exercised[HIGHEST]["ListOffsets"] == [advertised[2][1]]
    table = report.table(result)
    (shown,) = [line for line in table.splitlines()
                if line.startswith("versions sent at the highest level: ")]
    assert f"OffsetCommit v{high}" in shown
    paths = report.write_report(result, str(tmp_path))
    saved = json.loads(open(paths["results.json"]).read())
    assert saved["versions_exercised"][HIGHEST]["OffsetCommit"] == [high]
    assert report.load_json(paths["results.json"]).outcomes == result.outcomes
    assert "<summary>versions</summary>" in open(paths["report.html"]).read()


def test_every_wire_group_runs_at_both_levels_the_slow_ones_once():
    """The fuzzer and the failover, whose requests differ by version, run at both levels too."""
    catalogue = load_catalogue()
    assert catalogue["acks_1"].levels == (LOWEST, HIGHEST)
    assert catalogue["protocol_fuzz"].levels == (LOWEST, HIGHEST)
    assert catalogue["leader_failover"].levels == (LOWEST, HIGHEST)
    assert catalogue["fetch_from_follower"].levels == (LOWEST, HIGHEST)
    assert catalogue["chaos_workload"].levels == catalogue["segment_roll"].levels
    assert len(catalogue["segment_roll"].levels) == 1


def test_the_version_checks_skip_where_the_broker_lacks_the_versions(broker):
    """A broker advertising Fetch up to v12, Produce up to v9 and no DeleteRecords (Kafka 2.x's
    ranges, say): the checks of what newer versions carry skip, naming what is missing."""
    old = {**negotiate(broker.address), 0: (3, 9), 1: (4, 12), 3: (0, 9)}
    del old[21]
    catalogue = load_catalogue()
    reasons = {}
    for name in ("fetch_by_topic_id", "leader_discovery", "delete_records"):
        probe = Probe(broker.address, old, level=HIGHEST)
        outcome = run_check(catalogue[name], probe, 30.0)
        assert outcome.status == SKIP, (name, outcome.summary)
        reasons[name] = outcome.summary
    assert reasons == {
        "fetch_by_topic_id": "fetching by topic id needs v13; the broker's highest is v12",
        "leader_discovery": "leader hints in Produce needs v10; the broker's highest is v9",
        "delete_records": "the broker does not advertise DeleteRecords (api key 21)"}


def test_the_fuzzer_mutates_frames_of_each_level_and_says_which(broker):
    """Produce, Fetch, Metadata and ApiVersions frames at the lowest advertised versions, then
    at the highest (Produce v13 and Fetch v18 naming the topic by id); the summary and the
    versions exercised name them."""
    advertised = negotiate(broker.address)
    result = run(broker.address, select(only=("protocol_fuzz",)), options={"fuzz": 40})
    (outcome,) = result.outcomes
    assert outcome.status == PASS, outcome.summary
    for level, pick in ((LOWEST, 0), (HIGHEST, 1)):
        sent = outcome.versions[level]
        produce = max(advertised[0][pick], 3)  # the probe's floor: kio has no Produce v0-2
        assert (sent["Produce"], sent["Fetch"]) == ([produce], [advertised[1][pick]])
        assert f"Produce v{produce}, Fetch v{advertised[1][pick]}" in outcome.summary

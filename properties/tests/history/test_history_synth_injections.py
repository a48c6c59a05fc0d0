"""kafkaref synth's injections, every kind including those added for issue 5 (unseen,
offset_mismatch, nonmonotonic_send, send_reorder, swapped_acks -> cycle, int_nonmonotonic_poll,
dirty_read): the Spark job reports exactly the twin's cases on a history holding all of them (one
Spark run), every injection is found and every case explained; and the scoring rule that a case is
explained only by an injection naming its anomaly. (The twin, kind by kind, is in test_synth.py.)"""

import json

import pytest
from click.testing import CliRunner

from kafkaref.commands.main import main
from kafkaref.history.format import ANOMALIES
from kafkaref.spark_checks import twin
from kafkaref.spark_checks.scoring import load_truth, score
from kafkaref.spark_checks.session import shared_test_session
from kafkaref.spark_checks.synth import INJECTIONS, SIDE_EFFECTS, SynthSpec, generate

NEW_KINDS = ("unseen", "offset_mismatch", "nonmonotonic_send", "send_reorder", "swapped_acks",
             "int_nonmonotonic_poll", "dirty_read")


def test_every_anomaly_has_an_injection_and_side_effects_are_anomalies():
    assert set(INJECTIONS.values()) == set(ANOMALIES)
    assert set(SIDE_EFFECTS) == set(INJECTIONS)
    for kind, also in SIDE_EFFECTS.items():
        assert set(also) <= set(ANOMALIES) and INJECTIONS[kind] not in also, kind


def test_spark_reports_the_twins_cases_for_every_kind(tmp_path):
    """The one Spark run of the synth tests: `kafkaref check` on a history with every kind (the
    new ones included) writes the twin's report, every case kept; recall and precision are 1."""
    shared_test_session()
    spec = SynthSpec(sends=2400, partitions=3, producers=4, consumers=2, poll_every=2, seed=11,
                     rates={kind: 0.03 for kind in INJECTIONS})
    generate(spec, tmp_path / "h")
    truth = load_truth(tmp_path / "h")
    assert {t["kind"] for t in truth} == set(INJECTIONS) >= set(NEW_KINDS)
    result = CliRunner().invoke(main, ["check", str(tmp_path / "h"), "--examples", "10000"])
    assert result.exit_code == 1, result.output
    report = json.loads((tmp_path / "h" / "report.json").read_text())
    expected = twin.check(tmp_path / "h", examples=10_000)
    assert report == json.loads(expected.dumps())
    assert all(len(cases) == expected.counts[name] for name, cases in expected.anomalies.items())
    figures = score(truth, expected.anomalies)
    assert figures["recall"] == 1.0 and figures["precision"] == 1.0, figures


def _truth(kind, **tokens):
    return {"kind": kind, "anomaly": INJECTIONS[kind], "also": list(SIDE_EFFECTS[kind]),
            "values": [], "locations": [], "ops": [], **tokens}


def test_a_case_is_explained_only_by_an_injection_naming_its_anomaly():
    truth = [_truth("unseen", values=[7])]
    found = {"unseen": [("t", 0, -1, 7)]}
    assert score(truth, found)["precision"] == 1.0
    # The same value reported as a duplicate: unseen does not cause duplicates.
    figures = score(truth, {**found, "duplicate": [(7, (("t", 0, 1), ("t", 0, 2)))]})
    assert figures["precision"] == 0.5 and figures["unexplained"] == {"duplicate": 1}
    # A side effect the injection names is explained; recall is on the main anomaly only.
    truth = [_truth("swapped_acks", values=[7])]
    figures = score(truth, {"duplicate": [(7, (("t", 0, 1), ("t", 0, 2)))]})
    assert figures["precision"] == 1.0 and figures["recall"] == 0.0
    assert figures["by_kind"] == {"swapped_acks": {"injected": 1, "detected": 0}}
    # Ground truth written before "also" existed still scores.
    old = {k: v for k, v in _truth("unseen", values=[7]).items() if k != "also"}
    assert score([old], found)["recall"] == 1.0


@pytest.mark.parametrize("rates", [{"unseen": -0.1}, {"dirty_read": 1.5}])
def test_rates_outside_0_1_are_refused(rates):
    with pytest.raises(ValueError, match="between 0 and 1"):
        SynthSpec(sends=10, rates=rates)

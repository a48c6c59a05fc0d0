"""Scenario transcripts (properties/scenarios/*.txt, one per catalogued bug): replayed against
the model, the core and the explorers, each output must match the file. To accept a change,
regenerate with KAFKAREF_REWRITE=1 (or `kafkaref scenarios --rewrite`) and review `git diff`."""

import os

import pytest

from kafkaref.properties.transcripts import (
    format_file,
    is_slow,
    parse,
    replay,
    scenario_files,
)

FILES = [pytest.param(path, id=os.path.basename(path)[:-4],
                      marks=[pytest.mark.slow] if is_slow(path) else [])
         for path in scenario_files()]


@pytest.mark.parametrize("path", FILES)
def test_transcript(path):
    mismatches = replay(path)
    assert not mismatches, "\n\n".join(
        f"{path}:{m.line}: {m.command}\n--- expected\n{m.expected}\n--- got\n{m.actual}"
        for m in mismatches) + "\n(KAFKAREF_REWRITE=1 rewrites the file; review the diff)"


def test_rewrite_fills_in_outputs_and_keeps_comments(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("# a comment\n\ncore brokers=3\n----\n\nproduce 0 acks=1 count=1\n----\n"
                    "wrong\n\nrerun mutants=M4\n----\n")
    assert len(replay(str(path), rewrite=True)) == 3
    header, blocks = parse(path.read_text())
    assert header == ["# a comment"]
    assert [b.expected for b in blocks][:2] == ["ok", "produce [0] to 0 acks=1 -> none at 0"]
    assert blocks[2].expected == "nothing changed\nviolations: none"
    assert replay(str(path)) == []  # the rewritten file replays clean
    assert path.read_text() == format_file(header, [(b.command, b.expected) for b in blocks])


def test_a_malformed_transcript_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("core brokers=3\nok\n")
    with pytest.raises(ValueError, match="expected ----"):
        replay(str(path))

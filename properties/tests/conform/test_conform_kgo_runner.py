"""The runner of franz-go's kgo integration tests (properties/peer_suites/kgo.py), without Go: which
tests reach a broker, how go test's output becomes rows, causes, and the one-line errors. The
suite itself is opt-in (`tox -e kgo-suite`)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kafkaref.commands.peer_suite import peer_suite
from kafkaref.properties.peer_suites import kgo

HELPERS = """package kgo

func getSeedBrokers() Opt { return SeedBrokers(os.Getenv("KGO_SEEDS")) }

func newTestClient(opts ...Opt) (*Client, error) {
	return NewClient(append(opts, getSeedBrokers())...)
}

func (c *testConsumer) etl() { cl, _ := newTestClient() ; _ = cl }
"""
TESTS = """package kgo

func TestTalksToABroker(t *testing.T) { var c testConsumer; c.etl() }

func TestPureUnit(t *testing.T) { if Close() != nil { t.Fatal() } }
"""


def test_the_tests_that_reach_a_broker_are_found_through_their_helpers(tmp_path):
    package = tmp_path / "pkg" / "kgo"
    package.mkdir(parents=True)
    (package / "helpers_test.go").write_text(HELPERS)
    (package / "etl_test.go").write_text(TESTS)
    (package / "client.go").write_text("package kgo\n\nfunc Close() error { return nil }\n")
    assert kgo.broker_tests(str(tmp_path)) == ["TestTalksToABroker"]


OUTPUT = """=== RUN   TestGroupETL
=== RUN   TestGroupETL/range
    group_test.go:97: consumed 9999 records, expected 10000
--- FAIL: TestGroupETL (12.50s)
    --- FAIL: TestGroupETL/range (12.40s)
FAIL
"""


def test_a_verdict_line_and_its_first_failure_make_a_row():
    row = kgo.parse("TestGroupETL", OUTPUT, 13.0, False)
    assert (row.state, row.duration_s) == ("FAILED", 12.5)
    assert row.reason == "group_test.go:97: consumed 9999 records, expected 10000"
    assert kgo.cause_of(row) == "group_test.go:N: consumed N records, expected N"
    skipped = "--- SKIP: TestShareGroup (0.00s)\n    share_test.go:38: broker does not support"
    assert kgo.parse("TestShareGroup", skipped, 0.1, False).state == "SKIPPED"
    assert kgo.parse("TestPing", "--- PASS: TestPing (0.01s)\nPASS\n", 0.1, False).reason == ""


def test_a_test_killed_at_its_deadline_fails_naming_what_ran():
    output = ("panic: test timed out after 10m0s\n\trunning tests:\n\t\tTestTxnEtl (10m0s)\n"
              "\t\tTestTxnEtl/range (10m0s)\n\ngoroutine 1 [running]:\n")
    row = kgo.parse("TestTxnEtl", output, 600.0, True)
    assert row.failed and row.state == "TIMEOUT"
    assert row.reason == "killed at its deadline while running TestTxnEtl/range"
    assert kgo.cause_of(row) == "out of scope: transactions"
    assert kgo.parse("TestX", "", 3.0, False).state == "CRASHED"


def test_without_go_the_suite_says_so_in_one_line_and_exits_2(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no go on it
    result = CliRunner().invoke(peer_suite, ["kgo", "--cache", str(tmp_path / "cache"),
                                             "--work", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: downloading {kgo.FRANZ_GO}@{kgo.FRANZ_GO_VERSION}: the go command is not "
        "installed (Go 1.26 is needed)"]


def test_a_module_go_cannot_fetch_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("GOPROXY", "off")  # no registry asked: go refuses at once
    with pytest.raises(kgo.SuiteError) as error:
        kgo.fetch_source(str(tmp_path), version="v0.0.0-not-a-version")
    # "... failed (exit 1): ..." where go is installed, "...: the go command is not installed"
    assert str(error.value).startswith(f"downloading {kgo.FRANZ_GO}@v0.0.0-not-a-version")
    assert "\n" not in str(error.value)

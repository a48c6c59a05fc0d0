"""`kafkaref peer-suite librdkafka` and `kafkaref peer-suite kgo`: librdkafka's and franz-go's
own integration tests against kafkaref.

Fetches librdkafka's source with `npm pack node-rdkafka@3.6.1`, builds it and its test-runner
once into --cache (Debian's build packages, installed with apt-get when run as root), starts a
3-broker kafkaref cluster on 127.0.0.1 (num.partitions 4), runs the selected tests one number at
a time in full mode and prints passed / failed / skipped per test and the failures by cause.

Exit codes: 0 every test that ran passed; 1 some test failed; 2 the suite could not run (fetch,
build or cluster start failed, bad arguments).
"""

from __future__ import annotations

import json
import os
import sys

import click


def _numbers(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        return sorted({int(part) for part in text.replace(" ", "").split(",") if part})
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a comma-separated list of test numbers",
                                 param_hint="--tests") from None


@click.group("peer-suite")
def peer_suite():
    """Run another project's own test suite against kafkaref."""


@peer_suite.command("librdkafka")
@click.option("--cache", "cache_dir", type=click.Path(file_okay=False),
              default=os.path.join(os.path.expanduser("~"), ".cache", "kafkaref-librdkafka"),
              show_default=True, help="Where the source is unpacked and built (kept).")
@click.option("--work", "work_dir", type=click.Path(file_okay=False), default="librdkafka-run",
              show_default=True, help="test.conf, one log per test number, the cluster's data.")
@click.option("--tests", "tests", default=None, metavar="N,N,...",
              help="Test numbers to run (default: the selection in "
                   "properties/peer_suites/librdkafka_list.py).")
@click.option("--bootstrap", default=None, metavar="HOST:PORT,...",
              help="Run against this broker instead of starting a kafkaref cluster.")
@click.option("--deadline", "deadline_s", type=click.FloatRange(10, 7200), default=900,
              show_default=True,
              help="Seconds one test number may take before it is killed (0113, all of whose "
                   "sub-tests now run, takes about 10 minutes here).")
@click.option("--timeout-multiplier", type=click.FloatRange(0.1, 100), default=2.0,
              show_default=True, help="test.timeout.multiplier (the runner's own timeouts).")
@click.option("--parallel", type=click.IntRange(1, 8), default=1, show_default=True,
              help="Test numbers run at once (separate test-runner processes).")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Also write every row as JSON here.")
def librdkafka(cache_dir, work_dir, tests, bootstrap, deadline_s, timeout_multiplier, parallel,
               json_path):
    """librdkafka 2.12.0's integration tests (tests/0xxx) against a kafkaref cluster."""
    from kafkaref.properties.peer_suites import librdkafka as suite
    from kafkaref.properties.peer_suites import librdkafka_list as listing

    numbers = _numbers(tests) or list(listing.SELECTED)
    log = lambda message: click.echo(message, err=True)  # noqa: E731 - progress on stderr
    try:
        results = suite.run_suite(cache_dir, work_dir, numbers, bootstrap=bootstrap,
                                  timeout_multiplier=timeout_multiplier, deadline_s=deadline_s,
                                  parallel=parallel, log=log)
    except (RuntimeError, TimeoutError, OSError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    click.echo(suite.summary(results))
    if json_path:
        with open(json_path, "w") as f:
            json.dump([{"number": r.number, "returncode": r.returncode, "seconds": r.seconds,
                        "rows": [vars(row) for row in r.rows]} for r in results], f, indent=1)
    sys.exit(1 if suite.counts(results).failed else 0)


@peer_suite.command("kgo")
@click.option("--cache", "cache_dir", type=click.Path(file_okay=False),
              default=os.path.join(os.path.expanduser("~"), ".cache", "kafkaref", "kgo"),
              show_default=True, help="Where franz-go is copied and its tests built (kept).")
@click.option("--work", "work_dir", type=click.Path(file_okay=False), default="kgo-run",
              show_default=True, help="One log per test, the cluster's data.")
@click.option("--tests", "tests", default=None, metavar="NAME,NAME,...",
              help="Test functions to run (default: every test that reaches a broker).")
@click.option("--bootstrap", default=None, metavar="HOST:PORT,...",
              help="Run against this broker instead of starting a kafkaref cluster.")
@click.option("--records", type=click.IntRange(1, 10**7), default=10_000, show_default=True,
              help="KGO_TEST_RECORDS: records each ETL test produces.")
@click.option("--deadline", "deadline_s", type=click.FloatRange(10, 7200), default=600,
              show_default=True, help="Seconds one test may take before it is killed.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False), default=None,
              help="Also write every row as JSON here.")
def kgo(cache_dir, work_dir, tests, bootstrap, records, deadline_s, json_path):
    """franz-go's kgo integration tests (pkg/kgo) against a 3-broker kafkaref cluster."""
    from kafkaref.properties.peer_suites import kgo as suite

    chosen = [t for t in (tests or "").replace(" ", "").split(",") if t] or None
    log = lambda message: click.echo(message, err=True)  # noqa: E731 - progress on stderr
    try:
        rows = suite.run_suite(cache_dir, work_dir, chosen, bootstrap=bootstrap,
                               records=records, deadline_s=deadline_s, log=log)
    except (suite.SuiteError, RuntimeError, OSError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    click.echo(suite.summary(rows))
    if json_path:
        with open(json_path, "w") as f:
            json.dump([vars(row) for row in rows], f, indent=1)
    sys.exit(1 if suite.counts(rows).failed else 0)

"""`python -m kafkaref.properties.differential walk | replay | survey`: the differential machine
from the command line (a thin command over run.py).

    walk    N sequences against a fresh Apache Kafka and kafkaref (or --kafka/--kafkaref
            addresses); a divergence is shrunk and written as a transcript
    survey  the same walk, not stopping at a divergence: every kind of difference once
    replay  a transcript sent again to both brokers, or with --recorded to kafkaref alone
    record  a transcript's answers filled in from both brokers (a new regression transcript)

Exit codes: 0 same, 1 diverged, 2 bad input, 3 could not compare.
"""

from __future__ import annotations

import contextlib
import sys

import click

from kafkaref.properties.differential import run
from kafkaref.properties.differential.endpoints import CouldNotCompare, Endpoint
from kafkaref.properties.differential.machine import Diverged


def _pair(kafka: str | None, kafkaref: str | None, nodes: int):
    if bool(kafka) != bool(kafkaref):
        raise click.UsageError("give both --kafka and --kafkaref, or neither (both started here)")
    if kafka:
        return contextlib.nullcontext(run.endpoints_of(kafka, kafkaref))
    return run.started_pair(nodes)


def _exit(code: int, line: str) -> None:
    click.echo(line, err=code != run.SAME)
    sys.exit(code)


ADDRESSES = [
    click.option("--kafka", help="Apache Kafka's bootstrap address (default: start one)"),
    click.option("--kafkaref", help="kafkaref's bootstrap address (default: start one)"),
    click.option("--nodes", type=click.Choice(["1", "3"]), default="1", show_default=True,
                 help="nodes of each broker started here"),
]


def addresses(function):
    for option in reversed(ADDRESSES):
        function = option(function)
    return function


@click.group()
def main():
    """The differential machine: kafkaref against Apache Kafka, request by request."""


@main.command("walk")
@addresses
@click.option("--examples", default=40, show_default=True, help="sequences to compare")
@click.option("--steps", default=40, show_default=True, help="requests per sequence, at most")
@click.option("--random/--seeded", default=False, help="fresh randomness (default: seeded)")
@click.option("--transcripts", default=run.TRANSCRIPT_DIR, show_default=True,
              help="where a divergence's transcript is written")
def walk_command(kafka, kafkaref, nodes, examples, steps, random, transcripts):
    """Compare N generated sequences; stop at the first divergence (shrunk)."""
    try:
        with _pair(kafka, kafkaref, int(nodes)) as pair:
            tally = run.run_walk(pair, run.walk_settings(examples, steps, not random),
                                 transcripts)
    except CouldNotCompare as error:
        _exit(run.COULD_NOT_COMPARE, str(error) if str(error).startswith("could not") else
              f"could not compare: {error}")
    except Diverged as error:
        _exit(run.DIVERGED, f"diverged: {error}")
    _exit(run.SAME, f"same: {tally.summary()}")


@main.command("survey")
@addresses
@click.option("--examples", default=60, show_default=True)
@click.option("--steps", default=40, show_default=True)
def survey_command(kafka, kafkaref, nodes, examples, steps):
    """Walk without stopping at divergences; print each kind of difference once."""
    try:
        with _pair(kafka, kafkaref, int(nodes)) as pair:
            tally = run.run_walk(pair, run.walk_settings(examples, steps), keep_going=True)
    except CouldNotCompare as error:
        _exit(run.COULD_NOT_COMPARE, f"could not compare: {error}")
    for signature, (step, first) in sorted(tally.found.items()):
        click.echo(f"{signature}\n    {step.command()}\n    {first}")
    _exit(run.DIVERGED if tally.found else run.SAME,
          f"{len(tally.found)} kinds of difference; {tally.summary()}")


@main.command("replay")
@addresses
@click.argument("transcript", type=click.Path(exists=True, dir_okay=False))
@click.option("--recorded", is_flag=True,
              help="send to kafkaref alone and compare with the recorded Apache Kafka answers")
def replay_command(kafka, kafkaref, nodes, transcript, recorded):
    """Send a transcript's steps again, in order, and compare."""
    def replayed():
        if recorded:
            with _candidate(kafkaref, int(nodes)) as candidate:
                return run.replay(transcript, candidate=candidate)
        with _pair(kafka, kafkaref, int(nodes)) as pair:
            return run.replay(transcript, pair)

    result = _transcript_run(replayed, transcript, "diverged")
    _exit(run.SAME, f"same: {len(result.entries)} steps")


@main.command("record")
@addresses
@click.argument("transcript", type=click.Path(exists=True, dir_okay=False))
def record_command(kafka, kafkaref, nodes, transcript):
    """Fill a transcript's answers from both brokers (they must agree): a new regression
    transcript for properties/differential/transcripts/."""
    def recorded():
        with _pair(kafka, kafkaref, int(nodes)) as pair:
            header = " against ".join(f"{e.name} {e.version}" for e in pair)
            return run.record(transcript, pair, [header])

    result = _transcript_run(recorded, transcript, "not recorded, diverged")
    _exit(run.SAME, f"recorded {len(result.entries)} steps in {transcript}")


def _transcript_run(action, transcript: str, diverged: str):
    """action()'s Replay; exits with a one-line verdict unless every step compared equal."""
    try:
        result = action()
    except CouldNotCompare as error:
        _exit(run.COULD_NOT_COMPARE, f"could not compare: {error}")
    except ValueError as error:
        _exit(run.BAD_INPUT, f"{transcript}: not a transcript: {error}")
    if result.diverged_at is not None:
        entry = result.entries[result.diverged_at]
        _exit(run.DIVERGED, f"{diverged} at step {result.diverged_at + 1}: "
                            f"{entry.step.command()}\n{entry.output()}")
    return result


@contextlib.contextmanager
def _candidate(address: str | None, nodes: int):
    if address:
        yield Endpoint(run.CANDIDATE, address)
        return
    from kafkaref.chaos.peers import PeerError, start_peer

    try:
        with start_peer(run.CANDIDATE, nodes, **run.OURS_WITHOUT_RETENTION) as peer:
            endpoint = Endpoint(run.CANDIDATE, peer.bootstrap, peer.version)
            run.warm_up(endpoint)
            yield endpoint
    except PeerError as error:
        raise CouldNotCompare(f"kafkaref could not be started: {error}") from None

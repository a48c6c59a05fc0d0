"""The replica fetcher backs off after a round in which no partition got anywhere (every answer
an error, nothing to start again), as Kafka's fetcher backs off a failed partition
(replica.fetch.backoff.ms), and fetches again at once after a round that progressed: a leader is
not hammered with fetches it keeps refusing, and a follower catching up does not sleep between
rounds. Read off the fetcher's waits, not the clock: each round is scripted to progress or not.

Found by mutation testing (session 9df4313ef37b's survivor 00057: `if not progressed` read
`if progressed`, backing off after progress and spinning after errors; no test timed rounds)."""

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from kafkaref.impl.replication.fetcher import ReplicaFetcher

BACKOFF_S = 0.05


class _Stopping:
    """The server's stop event, set once the script's rounds have run; records each wait."""

    def __init__(self, script: list[bool]):
        self.script, self.waits = script, []

    def is_set(self) -> bool:
        return not self.script

    def wait(self, timeout: float) -> bool:
        self.waits.append((len(self.script), timeout))
        return self.is_set()


class _ScriptedFetcher(ReplicaFetcher):
    """One planned partition; each round's answer progresses or not as the script says."""

    def _plan(self):
        return ("127.0.0.1", 1), {("t", 0): (0, 1, 1, 0)}

    def _fetch(self, address, fetches):
        return []

    def _apply(self, fetches, answers) -> bool:
        return self.server.stopping.script.pop(0)

    def _start_at_leader_log_start(self, fetches, answers) -> bool:
        return False


@given(script=st.lists(st.booleans(), min_size=1, max_size=8))
def test_the_fetcher_backs_off_only_after_a_round_without_progress(script):
    stopping = _Stopping(list(script))
    fetcher = _ScriptedFetcher(SimpleNamespace(stopping=stopping), 1, 500)
    fetcher.run()
    # a wait after round i (the script then holding len(script) - i - 1 rounds) iff no progress
    expected = [(len(script) - i - 1, BACKOFF_S) for i, progressed in enumerate(script)
                if not progressed]
    assert stopping.waits == expected

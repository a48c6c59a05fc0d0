"""Purgatory: try / watch / try again, triggers, expiry, exactly-once completion."""

from kafkaref.impl.core.purgatory import DelayedOperation, Purgatory
from kafkaref.properties.clock import ManualClock


class Waiter(DelayedOperation):
    """Completes once `state['ready']` is true; records how it ended."""

    def __init__(self, delay_ms, state, log, name):
        super().__init__(delay_ms)
        self.state, self.log, self.name = state, log, name
        self.tries = 0

    def try_complete(self):
        self.tries += 1
        if self.state["ready"]:
            return self.force_complete()
        return False

    def on_complete(self):
        self.log.append((self.name, "expired" if self.expired else "done"))

    def on_expiration(self):
        self.log.append((self.name, "on_expiration"))


def test_completes_at_once_when_ready():
    clock, log = ManualClock(), []
    p = Purgatory("t", clock)
    assert p.try_complete_else_watch(Waiter(100, {"ready": True}, log, "a"), ["k"])
    assert log == [("a", "done")] and p.watched("k") == 0 and p.delayed() == 0


class FlipOnWatch(Waiter):
    """Becomes satisfiable right after its first try: the second try must catch it."""

    def try_complete(self):
        done = super().try_complete()
        self.state["ready"] = True
        return done


def test_second_try_after_watch_catches_a_trigger_in_between():
    clock, log = ManualClock(), []
    p = Purgatory("t", clock)
    op = FlipOnWatch(100, {"ready": False}, log, "a")
    assert p.try_complete_else_watch(op, ["k"])
    assert op.tries == 2 and log == [("a", "done")] and p.delayed() == 0


def test_trigger_completes_and_timer_is_cancelled():
    clock, log, state = ManualClock(), [], {"ready": False}
    p = Purgatory("t", clock)
    assert not p.try_complete_else_watch(Waiter(100, state, log, "a"), ["k1", "k2"])
    assert p.check_and_complete("k1") == 0
    state["ready"] = True
    assert p.check_and_complete("k2") == 1
    assert p.check_and_complete("k1") == 0
    clock.now_ms = 1_000
    assert p.advance_clock() == 0
    assert log == [("a", "done")]


def test_expiry_completes_once_then_runs_the_hook():
    clock, log, state = ManualClock(), [], {"ready": False}
    p = Purgatory("t", clock)
    p.try_complete_else_watch(Waiter(100, state, log, "a"), ["k"])
    clock.now_ms = 99
    assert p.advance_clock() == 0
    clock.now_ms = 100
    assert p.advance_clock() == 1
    state["ready"] = True
    assert p.check_and_complete("k") == 0
    assert log == [("a", "expired"), ("a", "on_expiration")]


def test_complete_all_forces_every_watcher():
    clock, log, state = ManualClock(), [], {"ready": False}
    p = Purgatory("t", clock)
    for name in "abc":
        p.try_complete_else_watch(Waiter(100, state, log, name), ["k"])
    assert p.complete_all("k") == 3
    assert sorted(log) == [("a", "done"), ("b", "done"), ("c", "done")]
    assert p.delayed() == 0


def test_completed_operations_leave_every_watch_list_on_the_next_clock_advance():
    """A fetch watching an idle partition and a busy one completes through the busy one; the
    idle one's list, which always holds a live fetch too, must not keep the completed ones."""
    clock, log = ManualClock(), []
    p = Purgatory("t", clock)
    for round_ in range(1_000):
        state = {"ready": False}
        p.try_complete_else_watch(Waiter(500, state, log, round_), ["idle", "busy"])
        state["ready"] = True
        assert p.check_and_complete("busy") == 1
        p.try_complete_else_watch(Waiter(10_000, {"ready": False}, log, "live"), ["idle"])
        clock.now_ms += 1
        p.advance_clock()
        assert p.watch_entries() == round_ + 1  # the live waiters only, none completed

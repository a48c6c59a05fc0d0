"""The hierarchical timing wheel against its naive twin (a sorted list)."""

from hypothesis import given
from hypothesis import strategies as st

from kafkaref.impl.core.timing_wheel import ListTimer, TimingWheelTimer
from kafkaref.properties.clock import ManualClock

ops = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(-5, 200_000)),
        st.tuples(st.just("add"), st.integers(0, 50)),
        st.tuples(st.just("cancel"), st.integers(0, 1000)),
        st.tuples(st.just("advance"), st.integers(0, 30)),
        st.tuples(st.just("advance"), st.integers(0, 100_000)),
        # land exactly on (or one before) a task's expiration: the boundary cases
        st.tuples(st.just("advance_to"), st.integers(0, 1000)),
        st.tuples(st.just("advance_before"), st.integers(0, 1000)),
    ),
    max_size=80,
)


@given(start_ms=st.integers(0, 10**12), ops=ops)
def test_wheel_fires_exactly_what_the_sorted_list_fires(start_ms, ops):
    clock = ManualClock(start_ms)
    wheel, twin = TimingWheelTimer(clock), ListTimer(clock)
    handles = []
    for op, arg in ops:
        if op == "add":
            payload = len(handles)
            handles.append((wheel.add(arg, payload), twin.add(arg, payload)))
        elif op == "cancel" and handles:
            w, t = handles[arg % len(handles)]
            wheel.cancel(w)
            twin.cancel(t)
        elif op.startswith("advance"):
            if op == "advance":
                clock.now_ms += arg
            elif handles:
                target = handles[arg % len(handles)][1].expiration_ms
                target -= op == "advance_before"
                clock.now_ms = max(clock.now_ms, target)
            assert sorted(wheel.advance_clock()) == sorted(twin.advance_clock())
        assert len(wheel) == len(twin)
        lower, exact = wheel.next_expiration_ms(), twin.next_expiration_ms()
        if exact is not None:  # nothing fires before the wheel's answer: a sleeper may wait
            assert lower is not None and lower <= exact
    clock.now_ms += 10**9
    assert sorted(wheel.advance_clock()) == sorted(twin.advance_clock())
    assert len(wheel) == 0


def test_overflow_levels_are_created_lazily_and_fire_on_time():
    clock = ManualClock(0)
    wheel = TimingWheelTimer(clock)
    wheel.add(8_000 + 17, "late")
    assert wheel.advance_clock(8_016) == []
    assert wheel.advance_clock(8_017) == ["late"]


def test_cancel_is_not_fired_and_zero_delay_fires_on_next_advance():
    clock = ManualClock(100)
    wheel = TimingWheelTimer(clock)
    a = wheel.add(10, "a")
    wheel.add(0, "now")
    wheel.cancel(a)
    assert wheel.advance_clock() == ["now"]
    assert wheel.advance_clock(1_000) == []


@given(start_ms=st.integers(0, 10**12),
       delays=st.lists(st.integers(-5, 100_000), min_size=1, max_size=40),
       cancels=st.sets(st.integers(0, 39), max_size=10))
def test_sleeping_until_next_expiration_fires_everything_on_time(start_ms, delays, cancels):
    """A ticker that only wakes at next_expiration_ms() fires each task at its first wake-up
    at or after its expiration, and always makes progress (the bound is never stuck)."""
    clock = ManualClock(start_ms)
    wheel, twin = TimingWheelTimer(clock), ListTimer(clock)
    handles = [(wheel.add(d, i), twin.add(d, i)) for i, d in enumerate(delays)]
    for index in cancels:
        if index < len(handles):
            wheel.cancel(handles[index][0])
            twin.cancel(handles[index][1])
    for _ in range(10_000):
        wake = wheel.next_expiration_ms()
        if wake is None:
            break
        clock.now_ms = max(clock.now_ms, wake)
        fired = wheel.advance_clock()
        assert sorted(fired) == sorted(twin.advance_clock())
        following = wheel.next_expiration_ms()
        assert fired or following is None or following > wake
    assert twin.next_expiration_ms() is None and len(wheel) == 0


def test_on_earlier_is_told_only_of_a_new_earliest_task():
    clock = ManualClock(1_000)
    wheel = TimingWheelTimer(clock)
    told = []
    wheel.on_earlier = told.append
    wheel.add(500, "a")  # nothing queued yet: the earliest
    wheel.add(900, "b")  # later than what is queued: a sleeper already wakes in time
    wheel.add(30, "c")  # earlier
    wheel.add(-5, "d")  # already due
    assert told == [1_500, 1_030, 995]

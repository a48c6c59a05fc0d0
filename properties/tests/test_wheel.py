"""The hierarchical timing wheel against its naive twin (a sorted list)."""

from hypothesis import given
from hypothesis import strategies as st

from kafkaref.impl.core.timing_wheel import SortedListTimer, TimingWheelTimer


class Clock:
    def __init__(self, now_ms: int = 0):
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms


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
    clock = Clock(start_ms)
    wheel, twin = TimingWheelTimer(clock), SortedListTimer(clock)
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
    clock.now_ms += 10**9
    assert sorted(wheel.advance_clock()) == sorted(twin.advance_clock())
    assert len(wheel) == 0


def test_overflow_levels_are_created_lazily_and_fire_on_time():
    clock = Clock(0)
    wheel = TimingWheelTimer(clock)
    wheel.add(8_000 + 17, "late")
    assert wheel.advance_clock(8_016) == []
    assert wheel.advance_clock(8_017) == ["late"]


def test_cancel_is_not_fired_and_zero_delay_fires_on_next_advance():
    clock = Clock(100)
    wheel = TimingWheelTimer(clock)
    a = wheel.add(10, "a")
    wheel.add(0, "now")
    wheel.cancel(a)
    assert wheel.advance_clock() == ["now"]
    assert wheel.advance_clock(1_000) == []

"""What the Hypothesis state machines of properties/ share: each is a module-level class whose
constructor takes its system under test (a factory) and its configuration, as zarr's and
Hypothesis's own shipped machines do, and bind() turns one into a class Hypothesis can run.

    TestWalk = bind(ModelMachine, config=ClusterConfig(brokers=3)).TestCase
    run_state_machine_as_test(lambda: CoreMachine(factory), settings=...)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from hypothesis import note as hypothesis_note
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.stateful import RuleBasedStateMachine

Machine = TypeVar("Machine", bound=RuleBasedStateMachine)


def bind(machine: type[Machine], **arguments) -> type[Machine]:
    """A subclass of machine whose instances are machine(**arguments): Hypothesis builds a
    machine without arguments (`.TestCase`, run_state_machine_as_test(cls)). One per call, so
    each test's TestCase has settings of its own."""

    def __init__(self) -> None:
        machine.__init__(self, **arguments)

    bound = type(machine.__name__, (machine,), {"__init__": __init__})
    bound.__qualname__, bound.__module__ = machine.__qualname__, machine.__module__
    return bound


def per_machine(strategy_for: Callable[[RuleBasedStateMachine], st.SearchStrategy]
                ) -> st.SearchStrategy:
    """A rule argument whose strategy depends on the machine's configuration (a broker id below
    its number of brokers): inside a rule, Hypothesis's runner is the machine."""
    return st.runner().flatmap(strategy_for)


def note(text: str) -> None:
    """hypothesis.note inside a test run; silent when a machine is driven by a script (a
    regression test calling its rules one by one)."""
    try:
        hypothesis_note(text)
    except InvalidArgument:
        pass

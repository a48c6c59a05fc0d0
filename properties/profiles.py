"""Hypothesis profiles shared by every test and by long-running property runs.

- ci:   the default. Derandomized (the seed is fixed by the test's own source), no example
        database, no deadline (a 2-core CI box is noisy), and the reproduction blob printed on
        failure, so a red run is reproducible byte for byte.
- dev:  random seeds and the local example database, for exploring while developing.
- deep: many more examples and longer stateful walks; opt-in (tox -e deep).

The deep profile fits pytest's per-test timeout (pyproject.toml: 600 s, a hang detector) by
design. Its 3,000 examples of 300 steps suit cheap tests; the heavy stateful walks (the core
lockstep, the core machine, the storage machine) cost 0.1 to 0.16 CPU-seconds per 300-step
walk, 300 to 490 CPU-seconds for 3,000: TestCoreLockstepSafe hit the timeout. Each is capped with
fit_deep_budget(TestCase, cpu_seconds_per_walk) at DEEP_WALK_CPU_SECONDS (90) of CPU. CPU, not
wall time, because the wall time depends on the load: on the 2-core box shared with other work
a niced walk took up to 6.4 times its CPU time, and 90 s x 6.4 still ends under 600 s. The caps
only ever lower max_examples and sit far above ci's 60 and dev's 100, so those runs do not
change. The lockstep walks at full length: `python -m kafkaref.properties.lockstep_bench deep`,
which has no timeout (docs/lockstep.md).

Derandomized is not enough for "reproducible": Hypothesis also draws, now and then, a constant
found in the source of any local module already imported (hypothesis.internal.conjecture.
providers: a process-wide pool that grows as modules are imported). A test's examples then
depended on which tests ran before it in the same process and imported what: the slow
random walk on [hw-without-maximal-isr] stopped finding its bug once the rolling-SIGKILL test
had imported impl/controller/server.py. So properties/tests/conftest.py imports every kafkaref
module before any test runs (import_every_module, there: the tests are the one layer allowed to
import every other), and every selection and order of tests draws from the same constants.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    max_examples=60,
    stateful_step_count=40,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", deadline=None, print_blob=True, max_examples=100)
settings.register_profile(
    "deep",
    deadline=None,
    print_blob=True,
    max_examples=3000,
    stateful_step_count=300,
    # A 300-step walk's smallest natural input is large by design: Hypothesis's
    # large_base_example check failed the deep lockstep walks before they ran one example.
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.large_base_example],
)


# CPU-seconds one heavy stateful test may spend (see the module docstring).
DEEP_WALK_CPU_SECONDS = 90


def cap_examples(test_case, max_examples: int):
    """Lower (never raise) a stateful TestCase's example count under the active profile; returns
    the TestCase."""
    current = test_case.settings
    test_case.settings = settings(current, max_examples=min(current.max_examples, max_examples))
    return test_case


def fit_deep_budget(test_case, cpu_seconds_per_walk: float):
    """Cap a stateful TestCase at the walks DEEP_WALK_CPU_SECONDS pays for, given the CPU cost of
    one 300-step walk measured on the 2-core box (cost per step grows with the walk's logs);
    returns the TestCase."""
    return cap_examples(test_case, int(DEEP_WALK_CPU_SECONDS / cpu_seconds_per_walk))


def load_from_environment() -> str:
    """Activate the profile named by HYPOTHESIS_PROFILE (default: ci) and return its name."""
    name = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    settings.load_profile(name)
    return name

"""Hypothesis profiles shared by every test and by long-running property runs.

- ci:   the default. Derandomized (the seed is fixed by the test's own source), no example
        database, no deadline (a 2-core CI box is noisy), and the reproduction blob printed on
        failure, so a red run is reproducible byte for byte.
- dev:  random seeds and the local example database, for exploring while developing.
- deep: many more examples and longer stateful walks; opt-in (tox -e deep).
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
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def load_from_environment() -> str:
    """Activate the profile named by HYPOTHESIS_PROFILE (default: ci) and return its name."""
    name = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    settings.load_profile(name)
    return name

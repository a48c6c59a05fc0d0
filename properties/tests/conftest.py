"""Shared by every test, in every layer folder: the Hypothesis profile, the one test clock
(ManualClock), the one broker fixture and the one cluster fixture.

Vary a fixture by parametrizing its setup, never by writing another fixture:

    pytestmark = pytest.mark.parametrize("broker_setup", [BrokerSetup(storage="disk")])
    @pytest.mark.parametrize("cluster_setup", [ClusterSetup(brokers=5)], scope="module")

Waiting for a condition: kafkaref.properties.waiting.wait_until (a function, not a fixture).
Tests are imported with --import-mode=importlib (pyproject.toml): test folders are not packages,
so a test file never imports another; shared helpers live in kafkaref.properties.*.
"""

import importlib
import pkgutil
from pathlib import Path

import pytest

from kafkaref.properties.clock import ManualClock
from kafkaref.properties.profiles import load_from_environment
from kafkaref.properties.servers import (
    BrokerSetup,
    ClusterSetup,
    PeerSetup,
    running_broker,
    running_cluster,
    running_peer,
)

# The top-level folders, each a kafkaref.<folder> package (setup.py maps them).
FOLDERS = sorted(p.parent.name for p in Path(__file__).resolve().parents[2].glob("*/__init__.py"))


def import_every_module() -> int:
    """Import every kafkaref module (returns how many), so that Hypothesis's pool of constants
    from local modules is the same whichever tests run, and in whatever order."""
    names = []
    for folder in FOLDERS:
        package = importlib.import_module(f"kafkaref.{folder}")
        names += [info.name for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]
    for name in names:
        importlib.import_module(name)
    return len(names)


PROFILE = load_from_environment()
# Before any test: Hypothesis's pool of constants from imported modules must not depend on which
# tests ran first (see kafkaref.properties.profiles).
MODULES = import_every_module()


def pytest_report_header(config):
    return (f"hypothesis profile: {PROFILE} (set HYPOTHESIS_PROFILE=ci|dev|deep); "
            f"{MODULES} kafkaref modules imported up front")


def pytest_make_parametrize_id(config, val, argname):
    if isinstance(val, (BrokerSetup, ClusterSetup, PeerSetup)):
        return val.id
    return None


@pytest.fixture
def clock():
    """A ManualClock at 0 ms that the test moves by hand (clock.now_ms = ..., clock.advance(ms))."""
    return ManualClock()


@pytest.fixture
def broker_setup():
    """What the `broker` fixture starts; parametrize `broker_setup` to change it."""
    return BrokerSetup()


@pytest.fixture
def broker(broker_setup, tmp_path):
    """A started in-process broker (KafkaServer) on 127.0.0.1 and an ephemeral port."""
    with running_broker(broker_setup, str(tmp_path)) as server:
        yield server


@pytest.fixture(scope="module")
def cluster_setup():
    """What the `cluster` fixture starts; parametrize it with scope="module" to change it."""
    return ClusterSetup()


@pytest.fixture(scope="module")
def cluster(cluster_setup, tmp_path_factory):
    """A started LocalCluster (broker processes), shared by the tests of one module."""
    with running_cluster(cluster_setup, str(tmp_path_factory.mktemp("cluster"))) as local:
        yield local


@pytest.fixture(scope="module")
def peer_setup():
    """What the `peer` fixture starts; parametrize it with scope="module" to change it."""
    return PeerSetup()


@pytest.fixture(scope="module")
def peer(peer_setup, tmp_path_factory):
    """A started peer broker (chaos/peers/; by default one Apache Kafka node), shared by the
    tests of one module."""
    with running_peer(peer_setup, str(tmp_path_factory.mktemp("peer"))) as started:
        yield started

"""Tests of the differential machine (properties/differential/): its parts on their own, a walk
of kafkaref against itself (no Java needed), and walks against Apache Kafka.

`pair` is the two systems under test: the shared `peer` fixture's Apache Kafka and the shared
`cluster` fixture's kafkaref (parametrize peer_setup and cluster_setup, module scope, to size
them). Other shared fixtures come from properties/tests/conftest.py.
"""

import pytest

from kafkaref.chaos.peers.kafkaref_cluster import kafkaref_version
from kafkaref.properties.differential import run
from kafkaref.properties.differential.endpoints import CouldNotCompare


@pytest.fixture(scope="module")
def pair(peer, cluster):
    """(Apache Kafka, kafkaref) endpoints, warmed up."""
    try:
        endpoints = run.endpoints_of(peer.bootstrap, cluster.bootstrap, peer.version,
                                     kafkaref_version())
    except CouldNotCompare as error:
        pytest.fail(f"could not compare: {error}")
    yield endpoints
    for endpoint in endpoints:
        endpoint.close()

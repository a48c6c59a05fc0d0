"""A broker that belongs to a cluster: control channel to the controller, replica fetchers."""

from __future__ import annotations

from kafkaref.impl.clock import SYSTEM_CLOCK, Clock
from kafkaref.impl.controller.client import ControllerClient
from kafkaref.impl.core.broker import BrokerConfig
from kafkaref.impl.replication.fetcher import FetcherManager
from kafkaref.impl.server.config import ServerConfig
from kafkaref.impl.server.server import KafkaServer, producer_id_file, storage_log_factory


def clustered_broker(data_dir: str, controller_address: str,
                     server_config: ServerConfig = ServerConfig(),  # noqa: B008
                     broker_config: BrokerConfig = BrokerConfig(),  # noqa: B008
                     log_factory=None, replica_fetch_wait_max_ms: int = 500,
                     clock: Clock = SYSTEM_CLOCK) -> KafkaServer:
    """Build (not start) a broker of the cluster whose controller is at controller_address; its
    core and its logs run on the one `clock`."""
    server = KafkaServer(broker_config, server_config,
                         log_factory or storage_log_factory(
                             data_dir, clock=clock, mutants=broker_config.mutants), clock=clock,
                         producer_id_file=producer_id_file(data_dir))
    server.broker.log_dir = data_dir or None
    server.controller_client = ControllerClient(server, controller_address)
    server.fetchers = FetcherManager(server, replica_fetch_wait_max_ms)
    server.extra_threads += [server.controller_client, server.fetchers]
    return server

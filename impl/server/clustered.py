"""A broker that belongs to a cluster: control channel to the controller, replica fetchers."""

from __future__ import annotations

from kafkaref.impl.controller.client import ControllerClient
from kafkaref.impl.core.broker import BrokerConfig
from kafkaref.impl.replication.fetcher import FetcherManager
from kafkaref.impl.server.config import ServerConfig
from kafkaref.impl.server.server import KafkaServer, producer_id_file, storage_log_factory


def clustered_broker(data_dir: str, controller_address: str,
                     server_config: ServerConfig = ServerConfig(),  # noqa: B008
                     broker_config: BrokerConfig = BrokerConfig(),  # noqa: B008
                     log_factory=None, replica_fetch_wait_max_ms: int = 500) -> KafkaServer:
    server = KafkaServer(broker_config, server_config,
                         log_factory or storage_log_factory(data_dir, mutants=broker_config.mutants),
                         producer_id_file=producer_id_file(data_dir))
    server.controller_client = ControllerClient(server, controller_address)
    server.fetchers = FetcherManager(server, replica_fetch_wait_max_ms)
    server.extra_threads += [server.controller_client, server.fetchers]
    return server

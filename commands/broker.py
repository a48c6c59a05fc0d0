"""`kafkaref broker`: one broker (replication factor 1) until SIGTERM or Ctrl-C.

Prints `listening on HOST:PORT` once it accepts connections (port 0 = ephemeral). A config file
holds Kafka-style `key=value` lines (listeners port, num.network.threads, num.io.threads,
queued.max.requests, socket.request.max.bytes, connections.max.idle.ms, log.dirs,
offsets.topic.num.partitions, offsets.topic.replication.factor, group.min.session.timeout.ms,
group.max.session.timeout.ms, group.initial.rebalance.delay.ms, num.partitions,
auto.create.topics.enable); flags win.

Exit codes: 0 stopped by SIGTERM / Ctrl-C; 2 bad arguments (click's usage errors, an unknown
mutant, --mutant without --allow-deliberate-bugs) or the port cannot be bound.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading

import click

from kafkaref.impl.clock import SYSTEM_CLOCK, skewed_clock
from kafkaref.impl.core.broker import BrokerConfig
from kafkaref.impl.mutants import Mutant, parse_mutants
from kafkaref.impl.server.config import ServerConfig

ACKNOWLEDGE_FLAG = "--allow-deliberate-bugs"

_SERVER_KEYS = {
    "num.network.threads": "num_network_threads",
    "num.io.threads": "num_io_threads",
    "queued.max.requests": "queued_max_requests",
    "socket.request.max.bytes": "socket_request_max_bytes",
    "connections.max.idle.ms": "connections_max_idle_ms",
    "port": "port",
    "host": "host",
}


# Kafka's broker settings of the group coordinator -> BrokerConfig fields
_BROKER_KEYS = {
    "offsets.topic.num.partitions": "offsets_topic_num_partitions",
    "offsets.topic.replication.factor": "offsets_topic_replication_factor",
    "group.min.session.timeout.ms": "group_min_session_timeout_ms",
    "group.max.session.timeout.ms": "group_max_session_timeout_ms",
    "group.initial.rebalance.delay.ms": "group_initial_rebalance_delay_ms",
    "log.initial.task.delay.ms": "log_initial_task_delay_ms",
    "log.retention.check.interval.ms": "log_retention_check_interval_ms",
}
_MAY_BE_ZERO = {"group.initial.rebalance.delay.ms", "log.initial.task.delay.ms"}
HOUR_MS = 3_600_000


def log_retention_from(properties: dict[str, str]) -> dict[str, int]:
    """The broker's log.retention.ms (else .minutes, else .hours: Kafka's precedence) and
    log.retention.bytes as LogConfig fields; absent ones keep Kafka's defaults (168 hours, -1)."""
    found = {}
    for key, field, scale in (("log.retention.hours", "retention_ms", HOUR_MS),
                              ("log.retention.minutes", "retention_ms", 60_000),
                              ("log.retention.ms", "retention_ms", 1),
                              ("log.retention.bytes", "retention_bytes", 1)):
        if key in properties:
            try:
                found[field] = int(properties[key]) * scale
            except ValueError:
                raise click.BadParameter(f"{key}={properties[key]!r} is not an integer") from None
            if found[field] < -1:
                raise click.BadParameter(f"{key} must be -1 (no limit) or more")
    return found


def broker_config_from(properties: dict[str, str], **fields) -> BrokerConfig:
    kwargs = {}
    for key, field in _BROKER_KEYS.items():
        if key in properties:
            try:
                kwargs[field] = int(properties[key])
            except ValueError:
                raise click.BadParameter(f"{key}={properties[key]!r} is not an integer") from None
            least = 0 if key in _MAY_BE_ZERO else 1
            if kwargs[field] < least:
                raise click.BadParameter(f"{key} must be at least {least}")
    kwargs.update({k: v for k, v in fields.items() if v is not None})
    return BrokerConfig(**kwargs)


def read_properties(path: str) -> dict[str, str]:
    values = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if "=" not in line:
                raise click.BadParameter(f"{path}:{number}: expected key=value")
            key, value = line.split("=", 1)
            values[key.strip()] = value.strip()
    return values


def server_config_from(properties: dict[str, str], overrides: dict) -> ServerConfig:
    kwargs = {}
    for key, field in _SERVER_KEYS.items():
        if key in properties:
            raw = properties[key]
            try:
                kwargs[field] = raw if field == "host" else int(raw)
            except ValueError:
                raise click.BadParameter(f"{key}={raw!r} is not an integer") from None
    kwargs.update({k: v for k, v in overrides.items() if v is not None})
    return ServerConfig(**kwargs)


def num_partitions_from(properties: dict[str, str], flag: int | None) -> int:
    """num.partitions from the flag, else the properties file, else Kafka's default 1."""
    if flag is not None:
        return flag
    raw = properties.get("num.partitions", "1")
    if not raw.isdigit() or not 1 <= int(raw) <= 10_000:
        raise click.BadParameter(f"num.partitions={raw!r} is not an integer in 1..10000")
    return int(raw)


def _is_address(text: str) -> bool:
    host, _, port = text.rpartition(":")
    return bool(host) and port.isdigit()


def _parse_peers(peers: tuple[str, ...]) -> dict[int, tuple[str, int]]:
    parsed = {}
    for peer in peers:
        broker_id, _, address = peer.partition("=")
        if not broker_id.isdigit() or not _is_address(address):
            raise click.BadParameter(f"{peer!r} is not ID=HOST:PORT", param_hint="--peer")
        host, _, port = address.rpartition(":")
        parsed[int(broker_id)] = (host, int(port))
    return parsed


def mutants_from_flags(codes: tuple[str, ...], acknowledged: bool) -> frozenset[Mutant]:
    """--mutant values -> Mutants; a usage error unless the deliberate bugs are acknowledged."""
    try:
        mutants = parse_mutants(codes)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--mutant") from None
    if mutants and not acknowledged:
        names = ", ".join(sorted(m.code for m in mutants))
        raise click.UsageError(
            f"--mutant {names} switches on deliberate bugs (docs/bugs.md) that lose or corrupt "
            f"data; they exist to test the checks. Add {ACKNOWLEDGE_FLAG} to start anyway.")
    return mutants


def mutant_options(command):
    """The --mutant / --allow-deliberate-bugs pair shared by `broker` and `cluster`."""
    codes = ", ".join(m.code for m in Mutant if m.possible)
    command = click.option(
        ACKNOWLEDGE_FLAG, "allow_deliberate_bugs", is_flag=True,
        help="Acknowledge that --mutant makes this broker lose or corrupt data.")(command)
    return click.option(
        "--mutant", "mutants", multiple=True, metavar="CODE",
        help=f"Switch on a deliberate bug for testing the checks ({codes}; repeatable; "
             f"see `kafkaref mutants`). Needs {ACKNOWLEDGE_FLAG}.")(command)


def install_stop_handlers() -> threading.Event:
    """SIGTERM / SIGINT set the returned event. Install before announcing readiness, so a
    signal sent right after the ready line is never the default (abrupt) exit."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    return stop


def wait_for(stop: threading.Event, tick=None) -> None:
    """Until stop is set; tick() (if given) every half second meanwhile."""
    while not stop.wait(0.5):
        if tick is not None:
            tick()


@click.command()
@click.option("--data-dir", "data_dir", type=click.Path(file_okay=False), default=None,
              help="Directory for partition logs (default: log.dirs or ./kafkaref-data).")
@click.option("--host", default=None, help="Interface to bind (default 127.0.0.1).")
@click.option("--port", type=click.IntRange(0, 65535), default=None, help="0 = ephemeral.")
@click.option("--broker-id", type=click.IntRange(0, 2**31 - 1), default=0)
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
              default=None, help="Kafka-style key=value properties file.")
@click.option("--network-threads", type=click.IntRange(1, 64), default=None)
@click.option("--io-threads", type=click.IntRange(1, 256), default=None)
@click.option("--controller", "controller_address", default=None, metavar="HOST:PORT",
              help="Join the cluster run by this controller (see `kafkaref cluster`).")
@click.option("--advertised-port", type=click.IntRange(1, 65535), default=None,
              help="Port registered with the controller instead of the bound one (a proxy).")
@click.option("--peer", "peers", multiple=True, metavar="ID=HOST:PORT",
              help="Replica-fetch from broker ID at this address instead of its registered "
                   "one (repeatable; chaos/ routes each broker pair through a proxy).")
@click.option("--clock-skew-file", type=click.Path(dir_okay=False), default=None,
              help="JSON {\"wall_ms\": W, \"monotonic_ms\": M} added to this broker's clock, "
                   "re-read while running (chaos/ makes the clock jump by rewriting it).")
@click.option("--segment-bytes", type=click.IntRange(1024, 2**31 - 1), default=None,
              help="log.segment.bytes: roll segments at this size (default 1 GiB); a "
                   "topic's segment.bytes overrides it. Values below Kafka's 1 MiB minimum, "
                   "which clients cannot ask for, are for tests.")
@click.option("--lose-unflushed-on-crash", is_flag=True,
              help="Power-loss mode: after an unclean stop, what was not fsynced is gone "
                   "(LogConfig.lose_unflushed_on_crash; chaos/ uses it).")
@click.option("--offsets-topic-partitions", type=click.IntRange(1, 10_000), default=None,
              help="offsets.topic.num.partitions: partitions of __consumer_offsets when this "
                   "broker creates it (default 50, Kafka's).")
@click.option("--num-partitions", type=click.IntRange(1, 10_000), default=None,
              help="num.partitions: partitions of an auto-created topic (default 1, as "
                   "Kafka's).")
@click.option("--group-initial-rebalance-delay-ms", type=click.IntRange(0, 300_000),
              default=None,
              help="group.initial.rebalance.delay.ms: how long the first rebalance of an empty "
                   "group waits for more members (default 0, as Kafka's shipped "
                   "server.properties; Kafka's built-in default is 3000).")
@click.option("--log-initial-task-delay-ms", type=click.IntRange(0, 2**63 - 1), default=None,
              help="log.initial.task.delay.ms: the retention task's first run this long after "
                   "start (default 30000, as Kafka's).")
@click.option("--log-retention-check-interval-ms", type=click.IntRange(1, 2**63 - 1),
              default=None,
              help="log.retention.check.interval.ms: then it runs this often (default 300000, "
                   "as Kafka's).")
@click.option("--auto-create-topics/--no-auto-create-topics", default=None,
              help="auto.create.topics.enable: Metadata creates unknown topics (default on, "
                   "as Kafka's).")
@mutant_options
@click.option("-v", "--verbose", is_flag=True)
def broker(data_dir, host, port, broker_id, config_file, network_threads, io_threads,
           controller_address, advertised_port, peers, clock_skew_file, segment_bytes,
           lose_unflushed_on_crash, offsets_topic_partitions, num_partitions,
           group_initial_rebalance_delay_ms, log_initial_task_delay_ms,
           log_retention_check_interval_ms, auto_create_topics, mutants,
           allow_deliberate_bugs, verbose):
    """Run one kafkaref broker until SIGTERM (alone, or in a cluster with --controller)."""
    from kafkaref.impl.server.clustered import clustered_broker
    from kafkaref.impl.server.server import storage_log_factory
    from kafkaref.impl.server.single import single_broker
    from kafkaref.impl.storage.config import LogConfig

    mutants = mutants_from_flags(mutants, allow_deliberate_bugs)
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    properties = read_properties(config_file) if config_file else {}
    config = server_config_from(properties, {
        "host": host, "port": port, "num_network_threads": network_threads,
        "num_io_threads": io_threads, "mutants": mutants or None,
        "advertised_port": advertised_port, "peer_addresses": _parse_peers(peers) or None})
    data_dir = data_dir or properties.get("log.dirs") or "kafkaref-data"
    os.makedirs(data_dir, exist_ok=True)
    if controller_address is not None and not _is_address(controller_address):
        raise click.BadParameter(f"{controller_address!r} is not HOST:PORT",
                                 param_hint="--controller")
    if auto_create_topics is None:
        auto_create_topics = properties.get("auto.create.topics.enable", "true") != "false"
    broker_config = broker_config_from(
        properties, broker_id=broker_id, mutants=mutants,
        offsets_topic_num_partitions=offsets_topic_partitions,
        default_partitions=num_partitions_from(properties, num_partitions),
        group_initial_rebalance_delay_ms=group_initial_rebalance_delay_ms,
        log_initial_task_delay_ms=log_initial_task_delay_ms,
        log_retention_check_interval_ms=log_retention_check_interval_ms,
        auto_create_topics=auto_create_topics)
    if mutants:
        logging.getLogger(__name__).warning(
            "deliberate bugs switched on: %s", ", ".join(sorted(m.code for m in mutants)))
    stop = install_stop_handlers()
    try:
        clock = skewed_clock(clock_skew_file) if clock_skew_file else SYSTEM_CLOCK
        storage = {"lose_unflushed_on_crash": lose_unflushed_on_crash or None,
                   "segment_bytes": segment_bytes, **log_retention_from(properties)}
        storage = {k: v for k, v in storage.items() if v is not None}
        logs = storage_log_factory(data_dir, LogConfig(mutants=mutants, **storage),
                                   clock=clock, mutants=mutants) if storage else None
        if controller_address:
            server = clustered_broker(data_dir, controller_address, config, broker_config,
                                      log_factory=logs, clock=clock)
        else:
            server = single_broker(data_dir, config, broker_config, log_factory=logs,
                                   clock=clock)
        server.start()
    except OSError as exc:
        click.echo(f"error: cannot listen on {config.host}:{config.port}: {exc}", err=True)
        sys.exit(2)
    click.echo(f"listening on {server.address}", nl=True)
    sys.stdout.flush()
    try:
        wait_for(stop)
    finally:
        server.shutdown()

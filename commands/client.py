"""`kafkaref topics create|list|describe|delete|add-partitions|configs`, `kafkaref produce`,
`kafkaref consume`.

produce / consume behave like Kafka's console producer and consumer: one record per stdin line
(optionally KEY<separator>VALUE), and one value per output line.
"""

from __future__ import annotations

import sys
import time

import click
from kio.schema.errors import ErrorCode

from kafkaref.impl.client.cluster_view import ClusterView, NoBrokerAvailable

BOOTSTRAP = click.option("--bootstrap-server", "--bootstrap", "bootstrap", required=True,
                         metavar="HOST:PORT[,...]", help="Brokers to contact first.")


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


def _view(bootstrap: str) -> ClusterView:
    try:
        return ClusterView(bootstrap)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--bootstrap-server") from None


def _any_connection(view: ClusterView):
    view.refresh([])
    if not view.brokers:
        raise NoBrokerAvailable("no broker in metadata")
    return view.connection(min(view.brokers))


@click.group()
def topics():
    """Create, list, describe and delete topics, add partitions, show and change configs.

    Exit codes: 0 done, 2 refused by the broker (its error code is printed), the cluster could
    not be reached, or the arguments are wrong."""


@topics.command("create")
@BOOTSTRAP
@click.option("--topic", required=True)
@click.option("--partitions", type=click.IntRange(1, 10_000), default=1, show_default=True)
@click.option("--replication-factor", type=click.IntRange(1, 32), default=1, show_default=True)
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE",
              help="Topic config, e.g. min.insync.replicas=2 (repeatable).")
def create(bootstrap, topic, partitions, replication_factor, configs):
    """Create TOPIC."""
    pairs = []
    for item in configs:
        if "=" not in item:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--config")
        pairs.append(dict(zip(("name", "value"), item.split("=", 1), strict=True)))
    view = _view(bootstrap)
    try:
        answer = _any_connection(view).send(19, 4, {"topics": [{
            "name": topic, "num_partitions": partitions,
            "replication_factor": replication_factor, "assignments": [], "configs": pairs}],
            "timeout": 30_000, "validate_only": False})
    except (OSError, NoBrokerAvailable) as exc:
        _fail(f"cannot reach the cluster: {exc}")
    finally:
        view.close()
    result = answer.topics[0]
    if result.error_code != ErrorCode.none:
        _fail(f"{ErrorCode(result.error_code).name}: {result.error_message or ''}".strip())
    click.echo(f"Created topic {topic}.")


def _metadata(bootstrap, topic_names):
    view = _view(bootstrap)
    try:
        return view.refresh(topic_names)
    except NoBrokerAvailable as exc:
        _fail(f"cannot reach the cluster: {exc}")
    finally:
        view.close()


@topics.command("list")
@BOOTSTRAP
def list_(bootstrap):
    """List topic names."""
    for topic in sorted(t.name for t in _metadata(bootstrap, None).topics):
        click.echo(topic)


@topics.command("describe")
@BOOTSTRAP
@click.option("--topic", default=None, help="Only this topic.")
def describe(bootstrap, topic):
    """Leader, replicas and ISR of every partition."""
    response = _metadata(bootstrap, None if topic is None else [topic])
    for t in sorted(response.topics, key=lambda t: t.name):
        if t.error_code != ErrorCode.none:
            _fail(f"{t.name}: {ErrorCode(t.error_code).name}")
        click.echo(f"Topic: {t.name}\tPartitionCount: {len(t.partitions)}")
        for p in sorted(t.partitions, key=lambda p: p.partition_index):
            click.echo(f"\tTopic: {t.name}\tPartition: {p.partition_index}\t"
                       f"Leader: {p.leader_id}\tLeaderEpoch: {p.leader_epoch}\t"
                       f"Replicas: {','.join(map(str, p.replica_nodes))}\t"
                       f"Isr: {','.join(map(str, p.isr_nodes))}")


def _admin_call(bootstrap, api_key: int, version: int, values: dict):
    """One admin request to any broker (it forwards to the controller); exits 2 if unreachable."""
    view = _view(bootstrap)
    try:
        return _any_connection(view).send(api_key, version, values)
    except (OSError, NoBrokerAvailable) as exc:
        _fail(f"cannot reach the cluster: {exc}")
    finally:
        view.close()


def _check(result) -> None:
    if result.error_code != ErrorCode.none:
        message = getattr(result, "error_message", None) or ""
        _fail(f"{ErrorCode(result.error_code).name}: {message}".strip())


@topics.command("delete")
@BOOTSTRAP
@click.option("--topic", required=True)
def delete(bootstrap, topic):
    """Delete TOPIC: every broker drops its partitions and their logs (DeleteTopics)."""
    answer = _admin_call(bootstrap, 20, 3, {"topic_names": [topic], "timeout": 30_000})
    _check(answer.responses[0])
    click.echo(f"Deleted topic {topic}.")


@topics.command("add-partitions")
@BOOTSTRAP
@click.option("--topic", required=True)
@click.option("--partitions", type=click.IntRange(1, 10_000), required=True,
              help="The new partition count (more than the topic has: partitions are never "
                   "removed).")
def add_partitions(bootstrap, topic, partitions):
    """Grow TOPIC to --partitions partitions (CreatePartitions)."""
    answer = _admin_call(bootstrap, 37, 1, {"topics": [{
        "name": topic, "count": partitions, "assignments": None}], "timeout": 30_000,
        "validate_only": False})
    _check(answer.results[0])
    click.echo(f"Topic {topic} now has {partitions} partitions.")


@topics.command("configs")
@BOOTSTRAP
@click.option("--topic", required=True)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override a topic config (repeatable).")
@click.option("--delete", "deletes", multiple=True, metavar="KEY",
              help="Remove an override: back to the default (repeatable).")
def configs(bootstrap, topic, sets, deletes):
    """Show TOPIC's configs (value, and whether overridden), or change them with --set and
    --delete (IncrementalAlterConfigs), as kafka-configs does."""
    ops = []
    for item in sets:
        if "=" not in item:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--set")
        name, value = item.split("=", 1)
        ops.append({"name": name, "config_operation": 0, "value": value})
    ops += [{"name": name, "config_operation": 1, "value": None} for name in deletes]
    if ops:
        answer = _admin_call(bootstrap, 44, 0, {"resources": [{
            "resource_type": 2, "resource_name": topic, "configs": ops}],
            "validate_only": False})
        _check(answer.responses[0])
        click.echo(f"Updated the configs of topic {topic}.")
        return
    answer = _admin_call(bootstrap, 32, 3, {"resources": [{
        "resource_type": 2, "resource_name": topic, "configuration_keys": None}],
        "include_synonyms": False, "include_documentation": False})
    result = answer.results[0]
    _check(result)
    for entry in result.configs:
        where = "override" if entry.config_source == 1 else "default"
        click.echo(f"{entry.name}={entry.value}\t({where})")


@click.command()
@BOOTSTRAP
@click.option("--topic", required=True)
@click.option("--acks", type=click.Choice(["0", "1", "all", "-1"]), default="all",
              show_default=True)
@click.option("--compression", type=click.Choice(["none", "gzip", "snappy", "lz4", "zstd"]),
              default="none", show_default=True)
@click.option("--key-separator", default=None, help="Split each line into KEY and VALUE.")
@click.option("--batch-size", type=click.IntRange(1, 64 << 20), default=16384)
@click.option("--linger-ms", type=click.IntRange(0, 60_000), default=5)
@click.option("--idempotence/--no-idempotence", default=False)
def produce(bootstrap, topic, acks, compression, key_separator, batch_size, linger_ms,
            idempotence):
    """Send each stdin line as a record (like kafka-console-producer)."""
    from kafkaref.impl.client.producer import ProduceError, Producer

    if idempotence and acks not in ("all", "-1"):
        raise click.BadParameter("idempotence needs --acks all", param_hint="--idempotence")
    try:
        producer = Producer(bootstrap, acks=acks, compression=compression,
                            batch_size=batch_size, linger_ms=linger_ms,
                            enable_idempotence=idempotence)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--bootstrap-server") from None
    futures = []
    separator = key_separator.encode() if key_separator is not None else None
    try:
        for lines in _ready_lines(sys.stdin.buffer):
            values, keys = _split_keys(lines, separator)
            futures.extend(producer.send_many(topic, values, keys=keys))
        producer.flush()
        for future in futures:
            future.result()
    except (ProduceError, NoBrokerAvailable, OSError, KeyError) as exc:
        _fail(str(exc))
    finally:
        producer.cluster.close()
    click.echo(f"{len(futures)} records sent", err=True)


def _ready_lines(stream, chunk_bytes: int = 1 << 20):
    """Lists of the complete lines stdin has ready (one read1 each: a line typed at a terminal
    goes out at once, a piped file in chunks of about chunk_bytes), without line endings; a
    last line without a newline comes at EOF."""
    tail = b""
    while True:
        chunk = stream.read1(chunk_bytes)
        if not chunk:
            break
        lines = (tail + chunk).split(b"\n")
        tail = lines.pop()
        if lines:
            yield [line.rstrip(b"\r") for line in lines]
    if tail:
        yield [tail.rstrip(b"\r")]


def _split_keys(lines: list, separator: bytes | None):
    """(values, keys) for lines; keys None when no separator is given (a line without the
    separator has no key, as in kafka-console-producer with parse.key)."""
    if separator is None:
        return lines, None
    values, keys = [], []
    for line in lines:
        key, sep, value = line.partition(separator)
        keys.append(key if sep else None)
        values.append(value if sep else line)
    return values, keys


@click.command()
@BOOTSTRAP
@click.option("--topic", required=True)
@click.option("--partition", "partitions", type=click.IntRange(0), multiple=True,
              help="Only these partitions (default: all).")
@click.option("--from-beginning", is_flag=True, help="Start at the earliest offset.")
@click.option("--offset", type=click.IntRange(0), default=None, help="Start at this offset.")
@click.option("--max-messages", type=click.IntRange(1), default=None)
@click.option("--timeout-ms", type=click.IntRange(1), default=None,
              help="Exit when no record arrived for this long.")
@click.option("--print-key", is_flag=True)
@click.option("--print-offset", is_flag=True)
def consume(bootstrap, topic, partitions, from_beginning, offset, max_messages, timeout_ms,
            print_key, print_offset):
    """Print records as they arrive (like kafka-console-consumer with assign())."""
    from kafkaref.impl.client.consumer import EARLIEST, LATEST, Consumer

    try:
        consumer = Consumer(bootstrap)
        count = consumer.cluster.partitions_for(topic)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--bootstrap-server") from None
    except (KeyError, NoBrokerAvailable, OSError) as exc:
        _fail(str(exc))
    chosen = list(partitions) or list(range(count))
    if any(p >= count for p in chosen):
        _fail(f"{topic} has {count} partitions")
    consumer.assign([(topic, p) for p in chosen])
    if offset is not None:
        for p in chosen:
            consumer.seek(topic, p, offset)
    else:
        consumer.seek_to(EARLIEST if from_beginning else LATEST)
    printed, last = 0, time.monotonic()
    out = sys.stdout.buffer
    try:
        while max_messages is None or printed < max_messages:
            records = consumer.poll(max_wait_ms=200)
            for r in records:
                prefix = b""
                if print_offset:
                    prefix += b"%d:%d\t" % (r.partition, r.offset)
                if print_key:
                    prefix += (r.key or b"null") + b"\t"
                out.write(prefix + (r.value if r.value is not None else b"null") + b"\n")
                printed += 1
                if max_messages is not None and printed >= max_messages:
                    break
            out.flush()
            if records:
                last = time.monotonic()
            elif timeout_ms is not None and (time.monotonic() - last) * 1000 >= timeout_ms:
                break
    except KeyboardInterrupt:
        pass
    except (NoBrokerAvailable, OSError) as exc:
        _fail(str(exc))
    finally:
        consumer.close()
    click.echo(f"Processed a total of {printed} messages", err=True)

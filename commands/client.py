"""`kafkaref topics create|list|describe|delete|add-partitions|configs`, `kafkaref produce`,
`kafkaref consume`.

produce / consume behave like Kafka's console producer and consumer: one record per stdin line
(optionally KEY<separator>VALUE), and one value per output line. The requests are impl/client's
(admin.py, producer.py, consumer.py, console.py).
"""

from __future__ import annotations

import sys
import time

import click
from kio.schema.errors import ErrorCode

from kafkaref.impl.client import admin
from kafkaref.impl.client.cluster_view import ClusterView, NoBrokerAvailable
from kafkaref.impl.client.console import ready_lines, split_keys

BOOTSTRAP = click.option("--bootstrap-server", "--bootstrap", "bootstrap", required=True,
                         metavar="HOST:PORT[,...]", help="Brokers to contact first.")


def _legal_topic(ctx, param, value):
    """A name Kafka would refuse is refused here, at once: asked for by name, a broker answers
    "unknown topic" to it (after the client's retries), which hides what is wrong."""
    from kafkaref.impl.core.topic_rules import TOPIC_NAME_MAX_CHARS, legal_topic_name

    if value is not None and not legal_topic_name(value):
        raise click.BadParameter(
            f"{value!r} is not a legal Kafka topic name: 1 to {TOPIC_NAME_MAX_CHARS} of the "
            "characters a-z A-Z 0-9 . _ - (and neither '.' nor '..')")
    return value


TOPIC = click.option("--topic", required=True, callback=_legal_topic)


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


def _view(bootstrap: str) -> ClusterView:
    try:
        return ClusterView(bootstrap)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--bootstrap-server") from None


def _pairs(items: tuple[str, ...], flag: str) -> list[tuple[str, str]]:
    """KEY=VALUE flags as (key, value) pairs, in order."""
    pairs = []
    for item in items:
        if "=" not in item:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint=flag)
        pairs.append(tuple(item.split("=", 1)))
    return pairs


def _admin(request, bootstrap: str, *args):
    """What one admin request (impl/client/admin.py) returns; exits 2 if refused or unreachable."""
    _view(bootstrap).close()  # a bad address is a usage error, before anything is sent
    try:
        return request(bootstrap, *args)
    except admin.AdminError as exc:
        _fail(str(exc))
    except (OSError, NoBrokerAvailable) as exc:
        _fail(f"cannot reach the cluster: {exc}")


@click.group()
def topics():
    """Create, list, describe and delete topics, add partitions, show and change configs.

    Exit codes: 0 done, 2 refused by the broker (its error code is printed), the cluster could
    not be reached, or the arguments are wrong."""


@topics.command("create")
@BOOTSTRAP
@TOPIC
@click.option("--partitions", type=click.IntRange(1, 10_000), default=1, show_default=True)
@click.option("--replication-factor", type=click.IntRange(1, 32), default=1, show_default=True)
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE",
              help="Topic config, e.g. min.insync.replicas=2 (repeatable).")
def create(bootstrap, topic, partitions, replication_factor, configs):
    """Create TOPIC."""
    _admin(admin.create_topic, bootstrap, topic, partitions, replication_factor,
           _pairs(configs, "--config"))
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
@click.option("--topic", default=None, callback=_legal_topic, help="Only this topic.")
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


@topics.command("delete")
@BOOTSTRAP
@TOPIC
def delete(bootstrap, topic):
    """Delete TOPIC: every broker drops its partitions and their logs (DeleteTopics)."""
    _admin(admin.delete_topic, bootstrap, topic)
    click.echo(f"Deleted topic {topic}.")


@topics.command("add-partitions")
@BOOTSTRAP
@TOPIC
@click.option("--partitions", type=click.IntRange(1, 10_000), required=True,
              help="The new partition count (more than the topic has: partitions are never "
                   "removed).")
def add_partitions(bootstrap, topic, partitions):
    """Grow TOPIC to --partitions partitions (CreatePartitions)."""
    _admin(admin.add_partitions, bootstrap, topic, partitions)
    click.echo(f"Topic {topic} now has {partitions} partitions.")


@topics.command("configs")
@BOOTSTRAP
@TOPIC
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override a topic config (repeatable).")
@click.option("--delete", "deletes", multiple=True, metavar="KEY",
              help="Remove an override: back to the default (repeatable).")
def configs(bootstrap, topic, sets, deletes):
    """Show TOPIC's configs (value, and whether overridden), or change them with --set and
    --delete (IncrementalAlterConfigs), as kafka-configs does."""
    pairs = _pairs(sets, "--set")
    if pairs or deletes:
        _admin(admin.alter_configs, bootstrap, topic, pairs, list(deletes))
        click.echo(f"Updated the configs of topic {topic}.")
        return
    for name, value, overridden in _admin(admin.describe_configs, bootstrap, topic):
        click.echo(f"{name}={value}\t({'override' if overridden else 'default'})")


@click.command()
@BOOTSTRAP
@TOPIC
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
        for lines in ready_lines(sys.stdin.buffer):
            values, keys = split_keys(lines, separator)
            futures.extend(producer.send_many(topic, values, keys=keys))
        producer.flush()
        for future in futures:
            future.result()
    except (ProduceError, NoBrokerAvailable, OSError, KeyError) as exc:
        _fail(str(exc))
    finally:
        producer.cluster.close()
    click.echo(f"{len(futures)} records sent", err=True)


@click.command()
@BOOTSTRAP
@TOPIC
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
    from kafkaref.impl.client.consumer import Consumer
    from kafkaref.impl.protocol.list_offsets import EARLIEST, LATEST

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
        _check_offset(consumer, topic, chosen, offset)
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


def _check_offset(consumer, topic: str, partitions: list[int], offset: int) -> None:
    """--offset must lie in every chosen partition's log, from its start to its end (the next
    offset written, where a consumer waits for new records): a fetch outside it would be reset
    to the start by the consumer's offset reset, silently."""
    from kafkaref.impl.protocol.list_offsets import EARLIEST, LATEST

    for p in partitions:
        try:
            start = consumer.list_offset((topic, p), EARLIEST)
            end = consumer.list_offset((topic, p), LATEST)
        except (NoBrokerAvailable, OSError) as exc:
            consumer.close()
            _fail(str(exc))
        if not start <= offset <= end:
            consumer.close()
            _fail(f"--offset {offset} is outside partition {p} of {topic}: its offsets run "
                  f"from {start} to {end} (the end: where the next record goes)")

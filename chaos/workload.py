"""A Jepsen-style queue workload over the Kafka protocol, against any bootstrap address.

Logical processes (docs/histories.md) run as threads of this process: each is single-threaded
and synchronous (one op in flight), so a thread gives exact invoke/complete recording at little
CPU, and two cores stay free for the brokers. A thread's process that ends an op in info (its
outcome unknown: a timeout, a lost connection) is crashed, as in Jepsen: it never invokes again,
and the thread carries on as a new process with a new client (for an idempotent producer, a new
producer id, so no sequence state is guessed).

- producers (kafkaref's client, and confluent-kafka as a second driver) send one unique int64
  per op, value = process << 32 | sequence, 8 bytes big-endian, to a partition drawn from the
  seed. kafkaref's producer runs with retries=0 so that an error code is the broker's answer to
  this very request: a definite one (NOT_ENOUGH_REPLICAS, NOT_LEADER...) is fail, an ambiguous one
  (REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS_AFTER_APPEND) or a lost connection is info, a
  connection refused before anything was sent is fail. librdkafka retries internally and does
  not say whether a failed message may have been persisted, so its errors are all info.
- consumers: assign + seek with kafkaref's consumer (every partition, from offset 0, an
  occasional seek back), recording the high watermark of every fetch response; or subscribe in a
  group with confluent-kafka (records only: its watermarks carry no leader epoch).
- final_reads(): after the nemesis healed everything, every partition is read from offset 0 to
  its end by a fresh process: the final log.
- consumers read on past a batch whose CRC does not match, as librdkafka does by default
  (check.crcs=false): what a broker served reaches the history (garbage_read).
- a prober (chaos/probes.py) pipelines a parked fetch and ApiVersions on one connection to the
  probe topic's leader (response_reorder, early_empty_fetch); a producer that heard nothing
  SILENCE_GRACE_S past its request timeout probes its broker (hung_request).
"""

from __future__ import annotations

import dataclasses
import itertools
import random
import threading
import time
from collections.abc import Callable

import attrs
from kio.schema.errors import ErrorCode

from kafkaref.chaos.probes import PROBE_TOPIC, pipeline, probe_broker
from kafkaref.chaos.recorder import Recorder
from kafkaref.chaos.values import decode_value, encode_value
from kafkaref.history.format import CheckConfig
from kafkaref.impl.client.cluster_view import ClusterView, NoBrokerAvailable
from kafkaref.impl.client.consumer import Consumer, CorruptRecords
from kafkaref.impl.client.producer import ProduceError, Producer
from kafkaref.impl.protocol.crc import compute_crc
from kafkaref.impl.protocol.list_offsets import LATEST
from kafkaref.impl.protocol.records.layout import LOG_OVERHEAD

# Answers that only come before the batch is appended: the send certainly did not happen. Every
# other code is ambiguous (info). NOT_LEADER_OR_FOLLOWER is ambiguous: a leader that loses its
# leadership answers the produce requests waiting in its purgatory with it, although their
# batches are in its log and the new leader may have them (a chaos run found one such send
# recorded as fail and then read: an aborted read that was not one).
DEFINITE_FAILURES = frozenset({
    ErrorCode.unknown_topic_or_partition, ErrorCode.not_enough_replicas,
    ErrorCode.fenced_leader_epoch, ErrorCode.unknown_leader_epoch,
    ErrorCode.corrupt_message, ErrorCode.message_too_large, ErrorCode.invalid_record,
    ErrorCode.record_list_too_large, ErrorCode.invalid_required_acks,
    ErrorCode.invalid_producer_epoch, ErrorCode.out_of_order_sequence_number,
    ErrorCode.topic_authorization_failed,
})
# A batch's CRC-32C field ends 21 bytes in (base offset, length, leader epoch, magic, crc).
_CRC_END = 21
# How long past its request timeout a producer waits for an answer before giving up.
SILENCE_GRACE_S = 5.0
CRASH_BACKOFF_S = 0.25


@attrs.frozen
class WorkloadConfig:
    topic: str = "chaos"
    partitions: int = 3
    replication_factor: int = 3
    min_insync_replicas: int = 2
    acks: str = attrs.field(default="all", validator=attrs.validators.in_(("0", "1", "all")))
    idempotence: bool = True
    producers: int = 2  # kafkaref's client
    confluent_producers: int = 1
    assign_consumers: int = 2  # kafkaref's consumer, assign + seek
    subscribe_consumers: int = 0  # confluent-kafka, subscribe in a group
    probers: int = 1  # pipelined fetch + ApiVersions on the probe topic (chaos/probes.py)
    # Apache Kafka's Java client (chaos/java_workload.py): VerifiableProducer JVMs, and
    # VerifiableConsumer JVMs subscribing in a group
    java_producers: int = 0
    java_consumers: int = 0
    probe_wait_ms: int = 400
    rate: float = 40.0  # sends per second per producer
    request_timeout_ms: int = 3000
    socket_timeout_s: float = 4.0
    poll_wait_ms: int = 200

    def __attrs_post_init__(self):
        if self.idempotence and self.acks != "all":
            raise ValueError("idempotence needs acks=all (as in Kafka)")
        if self.java_consumers and (self.producers or self.confluent_producers):
            raise ValueError("the Java consumer reads text values (StringDeserializer): with "
                             "java_consumers every producer must be a Java one")

    def check_config(self) -> CheckConfig:
        mode = "subscribe" if self.subscribe_consumers or self.java_consumers else "assign"
        return CheckConfig(acks=self.acks, idempotence=self.idempotence, mode=mode)


class ObservingConsumer(Consumer):
    """kafkaref's consumer, keeping the high watermark of every fetch response it takes, with
    the leader epoch the fetch named (the broker answers a fetch naming another epoch with an
    error, so the hw is that epoch's leader's)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.hws: dict[tuple[str, int], tuple[int, int]] = {}  # key -> (hw, leader epoch)
        self.corrupt: dict | None = None  # where a batch no CRC fix makes readable was met

    def _take(self, key, part):
        known = self.cluster.leaders.get(key)
        if part.error_code == ErrorCode.none and known is not None:
            self.hws[key] = (part.high_watermark, known[1])
        try:
            return super()._take(key, part)
        except CorruptRecords:
            pass
        # Read on as librdkafka does by default (check.crcs=false): what a corrupt batch holds
        # reaches the history, where a value nobody sent is a garbage_read.
        try:
            return super()._take(key, dataclasses.replace(
                part, records=with_matching_crcs(part.records)))
        except CorruptRecords:  # no batch at all: the op records where (corrupt_read)
            self.corrupt = {"corrupt_batch": {"topic": key[0], "partition": key[1],
                                              "offset": self.positions[key]}}
            raise


def with_matching_crcs(data: bytes) -> bytes:
    """data's whole batches with each CRC field rewritten to match its bytes: a client that
    does not check CRCs sees what the broker served."""
    out, position = bytearray(data), 0
    while position + _CRC_END <= len(out):
        end = position + LOG_OVERHEAD + int.from_bytes(out[position + 8:position + 12], "big")
        if end > len(out) or end - position < _CRC_END:
            break
        crc = compute_crc(memoryview(out)[position:end])
        out[position + _CRC_END - 4:position + _CRC_END] = crc.to_bytes(4, "big")
        position = end
    return bytes(out)


def create_topic(bootstrap: str, config: WorkloadConfig, timeout_s: float = 30.0,
                 brokers_expected: int | None = None) -> tuple[int, int]:
    """Create the workload's topic (an existing one is fine), retrying while brokers start;
    returns the (replication factor, min ISR) asked for. A cluster of fewer brokers than the
    replication factor gets one replica per broker (a single broker: RF 1, min ISR 1), so the
    workload runs against any broker; the run's summary says what was used.

    brokers_expected: a cluster we started ourselves has that many brokers; wait until Metadata
    lists them all (a broker's metadata image can lag the controller's registrations by a
    moment), so the topic is not made smaller than the cluster."""
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        view = ClusterView(bootstrap)
        try:
            view.refresh([])
            if brokers_expected is not None and len(view.brokers) < brokers_expected:
                raise NoBrokerAvailable(
                    f"metadata lists {len(view.brokers)} of {brokers_expected} brokers")
            replicas = min(config.replication_factor, len(view.brokers))
            min_isr = min(config.min_insync_replicas, replicas)
            connection = view.connection(min(view.brokers))
            configs = [{"name": "min.insync.replicas", "value": str(min_isr)}]
            topics = [(config.topic, config.partitions)] + (
                [(PROBE_TOPIC, 1)] if config.probers else [])
            answer = connection.send(19, 4, {"topics": [{
                "name": name, "num_partitions": count, "replication_factor": replicas,
                "assignments": [], "configs": configs} for name, count in topics],
                "timeout": 30_000, "validate_only": False})
            codes = [t.error_code for t in answer.topics]
            if all(c in (ErrorCode.none, ErrorCode.topic_already_exists) for c in codes):
                return replicas, min_isr
            last = RuntimeError(f"CreateTopics: {[ErrorCode(c).name for c in codes]}")
        except (OSError, ValueError, NoBrokerAvailable) as error:
            last = error
        finally:
            view.close()
        time.sleep(0.2)
    raise RuntimeError(f"cannot create topic {config.topic}: {last}")


class Workload:
    """Producer and consumer threads recording into recorder until stop()."""

    def __init__(self, bootstrap: str, recorder: Recorder, config: WorkloadConfig, seed: int):
        self.bootstrap, self.recorder, self.config = bootstrap, recorder, config
        self.seed = seed
        self.keys = [(config.topic, p) for p in range(config.partitions)]
        self._processes = itertools.count()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self.errors: list[str] = []  # unexpected exceptions in a thread (the run crashed)

    def start(self) -> None:
        c = self.config
        roles: list[tuple[str, Callable[[random.Random], None]]] = (
            [("producer", self._our_producer)] * c.producers
            + [("confluent-producer", self._confluent_producer)] * c.confluent_producers
            + [("assign-consumer", self._assign_consumer)] * c.assign_consumers
            + [("subscribe-consumer", self._subscribe_consumer)] * c.subscribe_consumers
            + [("prober", self._prober)] * c.probers)
        if c.java_producers or c.java_consumers:
            from kafkaref.chaos.java_workload import JavaRoles

            java = JavaRoles(self)
            roles += ([("java-producer", java.producer)] * c.java_producers
                      + [("java-consumer", java.consumer)] * c.java_consumers)
        for slot, (name, body) in enumerate(roles):
            rng = random.Random(f"{self.seed}:{name}:{slot}")
            thread = threading.Thread(target=self._guard, args=(body, rng), daemon=True,
                                      name=f"chaos-{name}-{slot}")
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout_s: float = 30.0) -> None:
        self._stopping.set()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        stuck = [t.name for t in self._threads if t.is_alive()]
        if stuck:
            self.errors.append(f"threads still running after stop: {stuck}")

    def _guard(self, body, rng: random.Random) -> None:
        try:
            body(rng)
        except Exception as error:  # noqa: BLE001 -- a workload bug must fail the run loudly
            self.errors.append(f"{threading.current_thread().name}: {error!r}")

    def new_process(self, first: list) -> int:
        """The next process number; after the first of a thread, a pause first: a process
        that crashed (info) is replaced, but not in a tight loop against a broken cluster."""
        if first:
            first.clear()
        else:
            self._stopping.wait(CRASH_BACKOFF_S)
        return next(self._processes)

    def stopping(self, wait_s: float = 0.0) -> bool:
        """The workload was asked to stop (waiting up to wait_s for it)."""
        return self._stopping.wait(wait_s) if wait_s else self._stopping.is_set()

    def _pace(self, started: float) -> None:
        self._stopping.wait(max(0.0, 1.0 / self.config.rate - (time.monotonic() - started)))

    # -- producers ----------------------------------------------------------------------------
    def _our_producer(self, rng: random.Random) -> None:
        c = self.config
        first = [True]
        while not self._stopping.is_set():
            process = self.new_process(first)
            producer = Producer(self.bootstrap, acks=c.acks, retries=0,
                                enable_idempotence=c.idempotence,
                                request_timeout_ms=c.request_timeout_ms,
                                client_id=f"chaos-{process}")
            # Room past the request's own timeout: a broker that never answers is told apart
            # from one that answers late (hung_request, chaos/probes.py).
            producer.cluster.timeout_s = c.request_timeout_ms / 1000 + SILENCE_GRACE_S
            try:
                for sequence in itertools.count():
                    if self._stopping.is_set():
                        return
                    started = time.monotonic()
                    if self._send_ours(producer, process, sequence, rng) == "info":
                        break
                    self._pace(started)
            finally:
                producer.cluster.close()  # not close(): nothing is buffered, flush could block

    def _send_ours(self, producer: Producer, process: int, sequence: int,
                   rng: random.Random) -> str:
        topic, partition = rng.choice(self.keys)
        value = process << 32 | sequence
        invocation = self.recorder.invoke(process, "send", {"partition": partition,
                                                            "value": value})
        offset, type_, error, observed = None, "ok", None, None
        leader = self._leader_of(producer, (topic, partition))
        started = time.monotonic()
        try:
            future = producer.send(topic, encode_value(value), partition=partition)
            producer.flush()
            acked = future.result(0).offset
            offset = acked if acked >= 0 else None
        except ProduceError as exc:
            type_ = "fail" if exc.error in DEFINITE_FAILURES else "info"
            error = exc.error.name
        except (NoBrokerAvailable, ConnectionRefusedError) as exc:
            type_, error = "fail", type(exc).__name__  # nothing was sent
        except TimeoutError as exc:  # no answer at all: was the broker there to give one?
            type_, error = "info", type(exc).__name__
            observed = self._silence(producer, leader, started)
        except Exception as exc:  # noqa: BLE001 -- lost connections: unknown outcome
            type_, error = "info", type(exc).__name__
        self.recorder.complete(invocation, type_, error=error, value=observed,
                               records=[("send", topic, partition, offset, value)])
        return type_

    @staticmethod
    def _leader_of(producer: Producer, key: tuple[str, int]) -> int:
        """The broker the send will go to (a failed send makes the producer forget it)."""
        if key not in producer.cluster.leaders:
            try:
                producer.cluster.refresh([key[0]])
            except (OSError, ValueError, NoBrokerAvailable):
                return -1  # the send finds no broker either
        return producer.cluster.leaders.get(key, (-1, -1))[0]

    def _silence(self, producer: Producer, leader: int, started: float) -> dict:
        """The observation of a request left unanswered: how long it waited, its timeout, and
        whether its broker answered a probe right after (hung_request)."""
        waited = round((time.monotonic() - started) * 1000)
        address = producer.cluster.brokers.get(leader)
        answered = address is not None and probe_broker(address)
        return {"broker": leader, "timeout_ms": self.config.request_timeout_ms,
                "waited_ms": waited, "probe": "answered" if answered else "silent"}

    def _confluent_producer(self, rng: random.Random) -> None:
        import confluent_kafka

        c = self.config
        first = [True]
        while not self._stopping.is_set():
            process = self.new_process(first)
            producer = confluent_kafka.Producer({
                "bootstrap.servers": self.bootstrap, "acks": c.acks, "linger.ms": 0,
                "enable.idempotence": c.idempotence, "client.id": f"chaos-{process}",
                "message.timeout.ms": 3 * c.request_timeout_ms,
                "request.timeout.ms": c.request_timeout_ms,
                "log_level": 0, "logger": _quiet_logger()})
            try:
                for sequence in itertools.count():
                    if self._stopping.is_set():
                        return
                    started = time.monotonic()
                    if self._send_confluent(producer, process, sequence, rng) == "info":
                        break
                    self._pace(started)
            finally:
                try:
                    producer.purge()
                    producer.flush(0)
                except Exception:  # noqa: BLE001, S110 -- a producer in a fatal state: dropped
                    pass

    def _send_confluent(self, producer, process: int, sequence: int, rng: random.Random) -> str:
        topic, partition = rng.choice(self.keys)
        value = process << 32 | sequence
        invocation = self.recorder.invoke(process, "send", {"partition": partition,
                                                            "value": value, "driver": "confluent"})
        outcome: dict = {}
        offset, type_, error = None, "ok", None
        try:
            producer.produce(topic, encode_value(value), partition=partition,
                             on_delivery=lambda err, msg: outcome.update(err=err, msg=msg))
        except (BufferError, Exception) as exc:  # noqa: BLE001 -- not enqueued: not sent
            type_, error = "fail", type(exc).__name__
        else:
            deadline = time.monotonic() + 4 * self.config.request_timeout_ms / 1000 + 5
            try:
                while "err" not in outcome and time.monotonic() < deadline:
                    producer.poll(0.05)
            except Exception as exc:  # noqa: BLE001 -- a fatal librdkafka error: unknown
                outcome.setdefault("fatal", exc)
            if "fatal" in outcome:
                type_, error = "info", f"fatal: {outcome['fatal']}"[:200]
            elif "err" not in outcome:
                type_, error = "info", "no delivery report"
            elif outcome["err"] is not None:
                type_, error = "info", outcome["err"].name()
            else:
                acked = outcome["msg"].offset()
                offset = acked if acked is not None and acked >= 0 else None
        self.recorder.complete(invocation, type_, error=error,
                               records=[("send", topic, partition, offset, value)])
        return type_

    # -- consumers ----------------------------------------------------------------------------
    def _assign_consumer(self, rng: random.Random) -> None:
        """Polls by one process until an op ends in info or a partition's leader changes.

        A new leader's high watermark can be below what the old one reported (it learns the
        hw from fetch responses, one round behind): Kafka's hw moves back across a leader
        change, which the design allows (docs/histories.md, hw_regression). A history row
        has no leader epoch, so a leader change ends the observing process; its successor
        assigns and seeks to where the first stopped (no reread, no gap in what is polled)."""
        c = self.config
        positions = dict.fromkeys(self.keys, 0)
        first = [True]
        while not self._stopping.is_set():
            process = self.new_process(first)
            consumer = ObservingConsumer(self.bootstrap, fetch_ahead=False,
                                         client_id=f"chaos-{process}")
            consumer.cluster.timeout_s = c.socket_timeout_s
            try:
                invocation = self.recorder.invoke(process, "assign", {
                    "partitions": [p for _, p in self.keys],
                    "offsets": [positions[k] for k in self.keys]})
                consumer.assign(self.keys)
                for key, offset in positions.items():
                    consumer.seek(*key, offset)
                self.recorder.complete(invocation, "ok")
                epochs: dict[tuple[str, int], int] = {}
                while not self._stopping.is_set():
                    if not self._resolve_positions(consumer, process):
                        break
                    if rng.random() < 0.02 and not self._seek_back(consumer, process, rng):
                        break
                    if not self._poll_ours(consumer, process, epochs):
                        break
            finally:
                positions.update({k: v for k, v in consumer.positions.items() if v is not None})
                consumer.close()

    def _resolve_positions(self, consumer: ObservingConsumer, process: int) -> bool:
        """A position the consumer reset (offset out of range) is looked up in an op of its
        own, so the history shows the jump as a seek rather than as a skip inside a poll."""
        for key in self.keys:
            if consumer.positions.get(key) is not None:
                continue
            invocation = self.recorder.invoke(process, "seek", {"partition": key[1]})
            try:
                offset = consumer.position(*key)
            except Exception as exc:  # noqa: BLE001 -- unknown: crash the process
                self.recorder.complete(invocation, "info", error=type(exc).__name__)
                return False
            self.recorder.complete(invocation, "ok", value={"partition": key[1],
                                                            "offset": offset})
        return True

    def _seek_back(self, consumer: ObservingConsumer, process: int, rng: random.Random) -> bool:
        topic, partition = rng.choice(self.keys)
        offset = max(0, consumer.positions[(topic, partition)] - rng.randrange(1, 100))
        invocation = self.recorder.invoke(process, "seek", {"partition": partition,
                                                            "offset": offset})
        consumer.seek(topic, partition, offset)
        self.recorder.complete(invocation, "ok")
        return True

    def _poll_ours(self, consumer: ObservingConsumer, process: int,
                   epochs: dict[tuple[str, int], int]) -> bool:
        """One poll op; False when the process must end (info, or a leader epoch changed:
        that poll's hw of the new epoch is left out, the next process records it)."""
        invocation = self.recorder.invoke(process, "poll")
        consumer.hws.clear()
        try:
            polled = consumer.poll(max_wait_ms=self.config.poll_wait_ms)
        except Exception as exc:  # noqa: BLE001 -- unknown: crash the process
            self.recorder.complete(invocation, "info", error=type(exc).__name__,
                                   value=consumer.corrupt)
            return False
        records = [("poll", r.topic, r.partition, r.offset, decode_value(r.value))
                   for r in polled]
        changed = False
        for (topic, partition), (hw, epoch) in sorted(consumer.hws.items()):
            if epochs.setdefault((topic, partition), epoch) != epoch:
                changed = True
                continue
            records.append(("hw", topic, partition, hw, None))
        self.recorder.complete(invocation, "ok", records=records,
                               value={"leader_epochs": {p: e for (_, p), e in epochs.items()}}
                               if changed else None)
        return not changed

    def _subscribe_consumer(self, rng: random.Random) -> None:
        import confluent_kafka

        c = self.config
        first = [True]
        while not self._stopping.is_set():
            process = self.new_process(first)
            consumer = confluent_kafka.Consumer({
                "bootstrap.servers": self.bootstrap, "group.id": f"chaos-{self.seed}",
                "auto.offset.reset": "earliest", "client.id": f"chaos-{process}",
                "session.timeout.ms": 6000, "log_level": 0, "logger": _quiet_logger()})
            try:
                invocation = self.recorder.invoke(process, "subscribe", {"topic": c.topic})
                consumer.subscribe([c.topic])
                self.recorder.complete(invocation, "ok")
                while not self._stopping.is_set():
                    if not self._poll_confluent(consumer, process):
                        break
            finally:
                consumer.close()

    def _poll_confluent(self, consumer, process: int) -> bool:
        """Records only: librdkafka's cached watermarks do not say which leader epoch they
        are from, so a leader change would look like an hw regression (see _assign_consumer)."""
        invocation = self.recorder.invoke(process, "poll")
        try:
            messages = consumer.consume(num_messages=200,
                                        timeout=self.config.poll_wait_ms / 1000)
            records = [("poll", m.topic(), m.partition(), m.offset(), decode_value(m.value()))
                       for m in messages if m.error() is None]
        except Exception as exc:  # noqa: BLE001 -- unknown: crash the process
            self.recorder.complete(invocation, "info", error=type(exc).__name__)
            return False
        self.recorder.complete(invocation, "ok", records=records)
        return True

    # -- probes -------------------------------------------------------------------------------
    def _prober(self, rng: random.Random) -> None:
        """Pipelined rounds on the probe topic (chaos/probes.py), one op each, a few a second;
        a round that cannot tell (no leader, a lost connection) ends in info."""
        c = self.config
        first = [True]
        while not self._stopping.is_set():
            process = self.new_process(first)
            view = ClusterView(self.bootstrap, client_id=f"chaos-{process}",
                               timeout_s=c.socket_timeout_s)
            try:
                while not self._stopping.is_set():
                    invocation = self.recorder.invoke(process, "pipeline")
                    try:
                        found = pipeline(view, c.probe_wait_ms, c.socket_timeout_s)
                    except Exception as exc:  # noqa: BLE001 -- unknown: crash the process
                        self.recorder.complete(invocation, "info", error=type(exc).__name__)
                        break
                    self.recorder.complete(invocation, "ok", value=found)
                    self._stopping.wait(rng.uniform(0.1, 0.4))
            finally:
                view.close()

    # -- the final phase ----------------------------------------------------------------------
    def final_reads(self, timeout_s: float = 60.0) -> dict[int, int]:
        """Read every partition from 0 to its end; {partition: records read}. A partition that
        could not be read in time completes info (its records are then unknown, not lost)."""
        read: dict[int, int] = {}
        deadline = time.monotonic() + timeout_s
        for key in self.keys:
            process = next(self._processes)
            consumer = ObservingConsumer(self.bootstrap, fetch_ahead=False,
                                         client_id=f"chaos-final-{process}")
            consumer.cluster.timeout_s = self.config.socket_timeout_s
            invocation = self.recorder.invoke(process, "final_read", {"partition": key[1]})
            try:
                pairs, end = _read_all(consumer, key, deadline)
            except Exception as exc:  # noqa: BLE001 -- the partition stays unread
                self.recorder.complete(invocation, "info", error=f"{type(exc).__name__}: {exc}",
                                       value=consumer.corrupt)
                continue
            finally:
                consumer.close()
            # The "hw" record marks the partition as read up to `end`, even when it is empty,
            # so the checkers judge polls from it (docs/histories.md, "final reads").
            self.recorder.complete(invocation, "ok", records=[
                *(("final_read", key[0], key[1], offset, value) for offset, value in pairs),
                ("hw", key[0], key[1], end, None)])
            read[key[1]] = len(pairs)
        return read


def _read_all(consumer: ObservingConsumer, key: tuple[str, int],
              deadline: float) -> tuple[list[tuple[int, int]], int]:
    """(offset, value) of every record below the partition's end, and that end offset."""
    while True:
        try:
            end = consumer.list_offset(key, LATEST)
            break
        except NoBrokerAvailable:
            if time.monotonic() > deadline:
                raise
    consumer.assign([key])
    consumer.seek(key[0], key[1], 0)
    pairs: list[tuple[int, int]] = []
    while consumer.positions.get(key) is None or consumer.positions[key] < end:
        if time.monotonic() > deadline:
            raise TimeoutError(f"read {len(pairs)} records of {key} up to {end}")
        try:
            polled = consumer.poll(max_wait_ms=200)
        except (OSError, NoBrokerAvailable):
            continue  # the cluster is still settling after the heal; the deadline bounds it
        for record in polled:
            if record.offset < end:
                pairs.append((record.offset, decode_value(record.value)))
    return pairs, end


def _quiet_logger():
    import logging

    logger = logging.getLogger("kafkaref.chaos.librdkafka")
    # librdkafka's own lines (FATAL included) are not ours to print: its errors reach the
    # history as the ops' outcomes
    logger.setLevel(logging.CRITICAL + 1)
    logger.propagate = False
    return logger

"""KafkaServer: the threaded shell. One lock guards the deterministic core (impl/core.Broker);
I/O threads take requests from the shared queue and call the core under it; a ticker advances
purgatory timers. Everything stops by itself on `shutdown()` (bounded waits)."""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Callable

from kafkaref.impl.core.broker import Broker, BrokerConfig
from kafkaref.impl.core.zero_copy import EncodedResponse
from kafkaref.impl.protocol import wire
from kafkaref.impl.server.config import ServerConfig
from kafkaref.impl.server.network import CLOSE, Acceptor, NetworkThread, QueuedRequest
from kafkaref.impl.server.producer_ids import ProducerIdBlocks

log = logging.getLogger(__name__)
# An idle I/O thread wakes this often to look at `stopping` (shutdown() also wakes it at once):
# at 0.1 s, eight idle threads woke 80 times a second per broker.
IO_IDLE_WAIT_S = 1.0


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)


def producer_id_file(data_dir: str | None) -> str | None:
    """Where a broker persists its producer-id block (None without a data directory)."""
    return os.path.join(data_dir, "producer_id_block") if data_dir else None


def storage_log_factory(data_dir: str, log_config=None, mutants=frozenset()) -> Callable:
    """Partition logs as impl/storage segmented logs under data_dir/<topic>-<partition>;
    mutants: the broker's deliberate faults (the storage ones act in the log)."""
    from kafkaref.impl.storage.config import LogConfig
    from kafkaref.impl.storage.log import Log

    # The core (Partition.append_as_leader) walks every record of a producer batch before the
    # log sees it, so the log keeps its frame checks (size, magic, CRC, base offset 0) but does
    # not walk the records a second time; it then writes the batch without copying it.
    config = log_config or LogConfig(validate_records=False, mutants=mutants)

    def open_log(key):
        return Log(os.path.join(data_dir, f"{key[0]}-{key[1]}"), config)

    return open_log


class KafkaServer:
    def __init__(self, broker_config: BrokerConfig, server_config: ServerConfig,
                 log_factory: Callable, clock: Callable[[], int] = monotonic_ms,
                 producer_id_base: int | None = None, producer_id_file: str | None = None):
        self.config = server_config
        self.clock = clock
        base = producer_id_base if producer_id_base is not None else (
            (broker_config.broker_id << 40) | (int(time.time()) & 0xFFFFFFFF) << 8)
        self.lock = threading.RLock()
        producer_ids = None
        if producer_id_file is not None and producer_id_base is None:
            producer_ids = ProducerIdBlocks(producer_id_file, broker_config.broker_id)
        self.broker = Broker(broker_config, clock, log_factory, producer_id_base=base,
                             producer_ids=producer_ids)
        self.broker.zero_copy_fetch = server_config.zero_copy_fetch
        self.stopping = threading.Event()
        self.requests: queue.Queue[QueuedRequest | None] = queue.Queue(
            server_config.queued_max_requests)  # None: wakes an idle I/O thread at shutdown
        self.network_threads = [NetworkThread(i, server_config, self.requests, self.stopping)
                                for i in range(server_config.num_network_threads)]
        self.acceptor = Acceptor(server_config, self.network_threads, self.stopping)
        self.port = self.acceptor.port
        self.io_threads = [threading.Thread(target=self._io_loop, name=f"kafkaref-io-{i}",
                                            daemon=True)
                           for i in range(server_config.num_io_threads)]
        self.ticker = threading.Thread(target=self._tick_loop, name="kafkaref-ticker",
                                       daemon=True)
        self._tick_wake = threading.Event()
        replicas = self.broker.replica_manager
        for purgatory in (replicas.produce_purgatory, replicas.fetch_purgatory):
            purgatory.timer.on_earlier = self._wake_ticker
        self.handled = 0
        self.extra_threads: list[threading.Thread] = []  # controller client, replica fetchers

    @property
    def address(self) -> str:
        return f"{self.config.host}:{self.port}"

    def start(self) -> KafkaServer:
        for thread in (*self.network_threads, *self.io_threads, self.ticker, self.acceptor,
                       *self.extra_threads):
            thread.start()
        return self

    def shutdown(self, timeout_s: float = 5.0) -> None:
        self.stopping.set()
        self._tick_wake.set()
        for _ in self.io_threads:  # wake the idle ones; busy ones see stopping when done
            try:
                self.requests.put_nowait(None)
            except queue.Full:
                break
        for thread in (*self.extra_threads, self.acceptor, *self.network_threads,
                       *self.io_threads, self.ticker):
            if thread.is_alive():
                thread.join(timeout_s)
        with self.lock:
            for partition in self.broker.replica_manager.partitions.values():
                close = getattr(partition.log, "close", None)
                if close is not None:
                    try:
                        close()
                    except Exception:  # noqa: BLE001 -- keep closing the others
                        log.exception("closing log %s", partition.key)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.shutdown()

    # -- threads ------------------------------------------------------------------------------
    def _io_loop(self) -> None:
        while not self.stopping.is_set():
            try:  # shutdown() wakes idle I/O threads with None; the timeout is a safety net
                item = self.requests.get(timeout=IO_IDLE_WAIT_S)
            except queue.Empty:
                continue
            if item is not None:
                self._handle(item)

    def _handle(self, item: QueuedRequest) -> None:
        network = self.network_threads[item.network_thread]
        request = item.request

        def respond(response) -> None:
            if response is None:
                network.send_response(item.connection_id, None)
                return
            if isinstance(response, EncodedResponse):  # the core encoded it (fetch)
                network.send_response(item.connection_id, response.parts)
                return
            try:
                frame = wire.encode_response(request.correlation_id, response)
            except Exception:  # noqa: BLE001 -- a bug in one response closes one connection
                log.exception("encoding %s v%s", request.name, request.api_version)
                frame = CLOSE
            network.send_response(item.connection_id, frame)

        try:
            with self.lock:
                self.handled += 1
                self.broker.handle(request, respond)
        except Exception:  # noqa: BLE001 -- a handler bug must not kill the I/O thread
            log.exception("handling %s v%s", request.name, request.api_version)
            network.send_response(item.connection_id, CLOSE)

    def _tick_loop(self) -> None:
        """Expire purgatory operations and run the periodic checks, sleeping until the next
        deadline (at most tick_max_ms). A fixed 5 ms tick cost ~60 us a time: 1.2% of a CPU per
        idle broker and ~45 us per MiB produced with acks=all; and it fired expirations up to a
        tick late. An operation due before the planned wake-up wakes the ticker (on_earlier)."""
        wake, most_ms = self._tick_wake, self.config.tick_max_ms
        while not self.stopping.is_set():
            wake.clear()  # before computing the deadline: a later set() is not lost
            due, now = None, self.clock()
            try:
                with self.lock:
                    self.broker.advance_clock(now)
                    off_lock = self._maybe_flush()
                    due = self.broker.next_deadline_ms()
                self._checkpoint(off_lock)  # fsyncs: not under the core lock
            except Exception:  # noqa: BLE001
                log.exception("ticker")
            sleep_ms = most_ms if due is None else min(most_ms, max(1, due - now))
            wake.wait(sleep_ms / 1000)

    def _wake_ticker(self, _expiration_ms: int) -> None:
        self._tick_wake.set()  # an operation due before the ticker's planned wake-up

    def _maybe_flush(self) -> list:
        """Tick the logs that need the core lock; return those whose tick (a due checkpoint
        write, nothing else) runs after it is released. A checkpoint is a temp file, fsyncs and a
        rename (8-12 ms here under load); under the lock it stalled every request and replica
        fetch of the broker, and with acks=all a stall on any broker holds the producer. Kafka
        also writes hw checkpoints from a scheduler thread holding no partition lock."""
        off_lock = []
        for partition in self.broker.replica_manager.partitions.values():
            if getattr(partition.log, "checkpoints_off_lock", False):
                off_lock.append(partition.log)
                continue
            flush = getattr(partition.log, "maybe_flush", None)
            if flush is not None:
                flush()
        return off_lock

    @staticmethod
    def _checkpoint(logs) -> None:
        for log_ in logs:
            try:
                log_.maybe_flush()
            except Exception:  # noqa: BLE001 -- a log closed or deleted meanwhile; the rest go on
                log.exception("checkpointing %s", getattr(log_, "directory", "?"))

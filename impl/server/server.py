"""KafkaServer: the threaded shell's wiring, around one deterministic core (impl/core.Broker) and
the one lock that guards it; a request's way through it is told in docs/architecture.md ("The
path of a produce request"). The ticker (here) advances purgatory timers and writes due
checkpoints. Everything stops by itself on `shutdown()` (bounded waits)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

from kafkaref.impl.clock import SYSTEM_CLOCK, Clock
from kafkaref.impl.core.broker import Broker, BrokerConfig
from kafkaref.impl.server.acceptor import Acceptor
from kafkaref.impl.server.config import ServerConfig
from kafkaref.impl.server.io_threads import IoThread
from kafkaref.impl.server.network_thread import NetworkThread
from kafkaref.impl.server.producer_ids import ProducerIdBlocks
from kafkaref.impl.server.request_queue import RequestQueue

log = logging.getLogger(__name__)


def producer_id_file(data_dir: str | None) -> str | None:
    """Where a broker persists its producer-id block (None without a data directory)."""
    return os.path.join(data_dir, "producer_id_block") if data_dir else None


def storage_log_factory(data_dir: str, log_config=None, clock: Clock = SYSTEM_CLOCK,
                        mutants=frozenset()) -> Callable:
    """Partition logs as impl/storage segmented logs under data_dir/<topic>-<partition>, on
    the wall-clock reading of the broker's clock (impl/clock.py says why): pass the clock the
    KafkaServer gets. mutants: the broker's deliberate faults (the storage ones act in the log)."""
    from kafkaref.impl.storage.config import LogConfig
    from kafkaref.impl.storage.log import Log

    # The core validates each producer batch once and hands the log its headers: the log only
    # stamps and writes (impl/storage/partition_log.py), whatever its config says.
    config = log_config or LogConfig(mutants=mutants)

    def open_log(key):
        return Log(os.path.join(data_dir, f"{key[0]}-{key[1]}"), config, clock_ms=clock.wall_ms)

    return open_log


class KafkaServer:
    def __init__(self, broker_config: BrokerConfig, server_config: ServerConfig,
                 log_factory: Callable, clock: Clock = SYSTEM_CLOCK,
                 producer_id_base: int | None = None, producer_id_file: str | None = None):
        self.config = server_config
        self.clock = clock
        base = producer_id_base if producer_id_base is not None else (
            (broker_config.broker_id << 40) | ((clock.wall_ms() // 1000) & 0xFFFFFFFF) << 8)
        self.lock = threading.RLock()
        producer_ids = None
        if producer_id_file is not None and producer_id_base is None:
            producer_ids = ProducerIdBlocks(producer_id_file, broker_config.broker_id)
        # The core runs on the monotonic reading; the logs (log_factory: storage_log_factory
        # given this same clock) on the wall-clock one. impl/clock.py says why.
        self.broker = Broker(broker_config, clock.monotonic_ms, log_factory, producer_id_base=base,
                             producer_ids=producer_ids)
        self.broker.zero_copy_fetch = server_config.zero_copy_fetch
        self.stopping = threading.Event()
        self.requests = RequestQueue(server_config.queued_max_requests)
        self.network_threads = [NetworkThread(i, server_config, self.requests, self.stopping)
                                for i in range(server_config.num_network_threads)]
        self.acceptor = Acceptor(server_config, self.network_threads, self.stopping)
        self.port = self.acceptor.port
        self.io_threads = [IoThread(i, self.requests, self.network_threads, self.broker, self.lock,
                                    self.stopping) for i in range(server_config.num_io_threads)]
        self.ticker = threading.Thread(target=self._tick_loop, name="kafkaref-ticker",
                                       daemon=True)
        self._tick_wake = threading.Event()
        # Monotonic ms the sleeping ticker plans to wake at; None while it works. Observable so
        # that a test can wait for "the ticker is asleep" as a condition.
        self.ticker_wakes_at_ms: int | None = None
        replicas = self.broker.replica_manager
        for purgatory in (replicas.produce_purgatory, replicas.fetch_purgatory,
                          replicas.delete_records_purgatory):
            purgatory.timer.on_earlier = self._wake_ticker
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
        self.requests.wake_idle(len(self.io_threads))
        for thread in (*self.extra_threads, self.acceptor, *self.network_threads,
                       *self.io_threads, self.ticker):
            if thread.is_alive():
                thread.join(timeout_s)
        with self.lock:
            for partition in self.broker.replica_manager.partitions.values():
                try:
                    partition.log.close()
                except Exception:  # noqa: BLE001 -- keep closing the others
                    log.exception("closing log %s", partition.key)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.shutdown()

    # -- threads ------------------------------------------------------------------------------
    def _tick_loop(self) -> None:
        """Expire purgatory operations and run the periodic checks, sleeping until the next
        deadline (at most tick_max_ms). A fixed 5 ms tick cost ~60 us a time: 1.2% of a CPU per
        idle broker and ~45 us per MiB produced with acks=all; and it fired expirations up to a
        tick late. An operation due before the planned wake-up wakes the ticker (on_earlier)."""
        wake, most_ms = self._tick_wake, self.config.tick_max_ms
        while not self.stopping.is_set():
            wake.clear()  # before computing the deadline: a later set() is not lost
            due, now = None, self.clock.monotonic_ms()
            try:
                with self.lock:
                    self.broker.advance_clock(now)
                    off_lock = self._maybe_flush()
                    due = self.broker.next_deadline_ms()
                self._checkpoint(off_lock)  # fsyncs: not under the core lock
            except Exception:  # noqa: BLE001
                log.exception("ticker")
            sleep_ms = most_ms if due is None else min(most_ms, max(1, due - now))
            self.ticker_wakes_at_ms = now + sleep_ms
            wake.wait(sleep_ms / 1000)
            self.ticker_wakes_at_ms = None

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
            if partition.log.checkpoints_off_lock:
                off_lock.append(partition.log)
            else:
                partition.log.maybe_flush()
        return off_lock

    @staticmethod
    def _checkpoint(logs) -> None:
        for log_ in logs:
            try:
                log_.maybe_flush()
            except Exception:  # noqa: BLE001 -- a log closed or deleted meanwhile; the rest go on
                log.exception("checkpointing a partition log")  # the error names its directory

"""Partition logs whose periodic hw checkpoint is written off the broker's core lock.

impl/storage's Log checkpoints its recovery point, hw and log start every
checkpoint_interval_ms (Kafka's replica.high.watermark.checkpoint.interval.ms) from
`maybe_flush()`, which the ticker calls. A checkpoint is a temp file, an fsync, a rename and a
directory fsync: 8-12 ms on these VMs under load. Called under the core lock (as it was), every
such write stalled every request of the broker and its replica fetchers; with acks=all one stall
on any of the three brokers holds up the producer. Kafka writes its hw checkpoints from a
scheduler thread that holds no partition lock either.

Writing off the lock needs the writes of one log serialized: the log also checkpoints from
request paths (segment roll, truncation, log start moving), which run under the core lock. This
subclass takes a per-log lock around every checkpoint write, so two writers never share the temp
file and a checkpoint reflects a snapshot taken after any write it follows. Only logs without a
flush policy (flush.ms / flush.messages unset, Kafka's default) qualify: a policy flush fsyncs
segments, which must not run beside appends, so those logs are still ticked under the core lock.
"""

from __future__ import annotations

import threading

from kafkaref.impl.storage.log import Log


class CheckpointedLog(Log):
    def __init__(self, *args, **kwargs):
        self.checkpoint_lock = threading.RLock()  # before Log.__init__, which checkpoints
        super().__init__(*args, **kwargs)

    def write_checkpoint(self) -> None:
        with self.checkpoint_lock:
            super().write_checkpoint()

    @property
    def checkpoints_off_lock(self) -> bool:
        """True if the ticker may call maybe_flush() without the core lock (no flush policy:
        maybe_flush then only writes a due checkpoint)."""
        return self.config.flush_ms is None and self.config.flush_messages is None

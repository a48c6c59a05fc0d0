"""`kafkaref bench storage`: the commit log against raw file I/O measured in the same run.

1. Append: 1 KiB records in 16 KiB and 1 MiB batches through Log.append_as_leader (frame check
   with CRC, and full record validation) against os.write of the same bytes to a plain file.
   Neither fsyncs (Kafka's default: durability comes from replication). The three contenders
   run APPEND_REPEATS rounds, interleaved in a rotating order; each one's best time counts.
2. Read: whole log through read_slice + os.sendfile into a socket against a plain sequential
   read of the same file (and against read + sendall, the copy sendfile avoids).
3. Recovery: a 1 GiB log (1 MiB batches) reopened after a crash with a full scan (size, CRC,
   offsets, index rebuild) against crc32c over the same number of bytes in memory; and a 256 MiB
   log of 16 KiB batches, where per-batch overhead shows.
Peak resident memory above the starting point is sampled for every phase.
Temporary files live in one directory under the system temp dir and are removed at the end.
"""

import os
import shutil
import socket
import tempfile
import threading
import time
from functools import partial

import crc32c
import psutil

from kafkaref.impl.progress import SilentProgress
from kafkaref.impl.protocol.records import build_batch
from kafkaref.impl.storage.config import LogConfig
from kafkaref.impl.storage.log import Log

RECORD_BYTES = 1024
APPEND_BYTES = 128 * 1024 * 1024
REPEATS = 3  # each contender runs this often, interleaved; the best time counts (noisy box)
APPEND_REPEATS = 7  # appends are short (~0.1 s a run): more rounds steady the best-of
RECOVERY_BYTES = 1024 * 1024 * 1024
SMALL_RECOVERY_BYTES = 256 * 1024 * 1024
MIB = 1024 * 1024


class PeakMemory:
    """Samples this process's RSS every few ms in a thread; .peak_mib is the growth seen."""

    def __init__(self):
        self._process = psutil.Process()
        self._start = self._process.memory_info().rss
        self._peak = self._start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self):
        while not self._stop.wait(0.005):
            self._peak = max(self._peak, self._process.memory_info().rss)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._peak = max(self._peak, self._process.memory_info().rss)

    @property
    def peak_mib(self) -> float:
        return (self._peak - self._start) / MIB


def _batch(records_per_batch: int) -> bytes:
    value = bytes(range(256)) * (RECORD_BYTES // 256)
    records = [(b"key-%06d" % i, value, (), 1_700_000_000_000 + i) for i in range(records_per_batch)]
    return build_batch(records)


def _raw_write(path: str, batch: bytes, count: int) -> float:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    try:
        start = time.perf_counter()
        for _ in range(count):
            os.write(fd, batch)
        return time.perf_counter() - start
    finally:
        os.close(fd)
        os.unlink(path)


def _log_append(directory: str, batch: bytes, count: int, validate_records: bool) -> float:
    log = Log(directory, LogConfig(validate_records=validate_records), clock_ms=lambda: 0)
    try:
        start = time.perf_counter()
        for _ in range(count):
            info = log.append_as_leader(batch, 0)
            if info.error:
                raise RuntimeError(f"append failed: {info}")
        return time.perf_counter() - start
    finally:
        log.crash()  # no final fsync: it is not part of the append path being measured
        shutil.rmtree(directory)


def _append_rows(root: str, progress) -> tuple[list[dict], dict]:
    rows, figures = [], {}
    for label, records in (("16 KiB", 16), ("1 MiB", 1024)):
        batch = _batch(records)
        count = max(1, APPEND_BYTES // len(batch))
        total_mb = count * len(batch) / MIB
        task = progress.add_task(f"append {label} batches", total=3 * APPEND_REPEATS)
        contenders = {
            "raw": partial(_raw_write, os.path.join(root, "raw.bin"), batch, count),
            "frame": partial(_log_append, os.path.join(root, "frame"), batch, count, False),
            "full": partial(_log_append, os.path.join(root, "full"), batch, count, True),
        }
        times = {name: [] for name in contenders}
        with PeakMemory() as memory:
            for round_number in range(APPEND_REPEATS):
                # Interleaved, each round in a rotated order, so that no contender always runs
                # right after another (page-cache writeback of the previous run's bytes);
                # every contender writes the same batch bytes the same number of times.
                names = list(contenders)
                shift = round_number % len(names)
                for name in names[shift:] + names[:shift]:
                    times[name].append(contenders[name]())
                    progress.advance(task)
        raw, frame, full = min(times["raw"]), min(times["frame"]), min(times["full"])
        key = label.replace(" ", "").lower()
        for name, seconds in (("raw os.write", raw), ("Log append, CRC check", frame),
                              ("Log append, every record validated", full)):
            rows.append({"phase": f"append {label} batches", "method": name,
                         "MB": round(total_mb), "seconds": seconds,
                         "MB/s": total_mb / seconds, "vs baseline": raw / seconds})
        figures[f"append_{key}_crc_ratio_vs_raw"] = raw / frame
        figures[f"append_{key}_validated_ratio_vs_raw"] = raw / full
        figures[f"append_{key}_crc_mb_per_s"] = total_mb / frame
        figures[f"append_{key}_validated_mb_per_s"] = total_mb / full
        figures[f"append_{key}_peak_rss_mib"] = memory.peak_mib
    return rows, figures


def _build_log(directory: str, batch: bytes, total_bytes: int, progress, label: str) -> Log:
    log = Log(directory, LogConfig(validate_records=False), clock_ms=lambda: 0)
    count = max(1, total_bytes // len(batch))
    task = progress.add_task(f"writing {label} log", total=count)
    for _ in range(count):
        log.append_as_leader(batch, 0)
        progress.advance(task)
    log.flush()
    return log


def _drain(sock: socket.socket, total: int, done: list) -> None:
    buffer = bytearray(MIB)
    view = memoryview(buffer)
    received = 0
    while received < total:
        got = sock.recv_into(view)
        if not got:
            break
        received += got
    done.append(received)


def _timed_socket_transfer(total: int, send) -> float:
    left, right = socket.socketpair()
    done: list[int] = []
    reader = threading.Thread(target=_drain, args=(right, total, done))
    reader.start()
    start = time.perf_counter()
    send(left)
    reader.join()
    seconds = time.perf_counter() - start
    left.close()
    right.close()
    if done[0] != total:
        raise RuntimeError(f"socket received {done[0]} of {total} bytes")
    return seconds


def _sendfile_all(log: Log, sock: socket.socket) -> None:
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        with log.read_slice(offset, MIB) as fetched:
            sent = 0
            while sent < fetched.size:
                sent += fetched.sendfile(sock.fileno(), sent)
            offset = fetched.next_offset


def _read_sendall(paths: list[str], sock: socket.socket) -> None:
    buffer = bytearray(MIB)
    view = memoryview(buffer)
    for path in paths:
        with open(path, "rb", buffering=0) as file:
            while got := file.readinto(view):
                sock.sendall(view[:got])


def _raw_read(paths: list[str]) -> float:
    buffer = bytearray(MIB)
    start = time.perf_counter()
    for path in paths:
        with open(path, "rb", buffering=0) as file:
            while file.readinto(buffer):
                pass
    return time.perf_counter() - start


def _read_rows(log: Log, progress) -> tuple[list[dict], dict]:
    paths = [segment.log_path for segment in log.segments]
    total = log.size_bytes
    total_mb = total / MIB
    task = progress.add_task("reads (sendfile, raw)", total=3 * REPEATS)
    _raw_read(paths)  # warm the page cache for every contender alike
    raw, sendfile, copy = [], [], []
    with PeakMemory() as memory:
        for _ in range(REPEATS):
            raw.append(_raw_read(paths))
            progress.advance(task)
            sendfile.append(_timed_socket_transfer(total, lambda s: _sendfile_all(log, s)))
            progress.advance(task)
            copy.append(_timed_socket_transfer(total, lambda s: _read_sendall(paths, s)))
            progress.advance(task)
    raw, sendfile, copy = min(raw), min(sendfile), min(copy)
    rows = [
        {"phase": "read whole log", "method": name, "MB": round(total_mb), "seconds": seconds,
         "MB/s": total_mb / seconds, "vs baseline": raw / seconds}
        for name, seconds in (("raw file read", raw), ("Log read_slice + sendfile to socket",
                                                         sendfile),
                              ("file read + socket sendall", copy))
    ]
    figures = {
        "read_sendfile_mb_per_s": total_mb / sendfile,
        "read_sendfile_ratio_vs_raw_read": raw / sendfile,
        "read_sendfile_ratio_vs_read_sendall": copy / sendfile,
        "read_peak_rss_mib": memory.peak_mib,
    }
    return rows, figures


def _crc_in_memory(chunk: bytes, total_bytes: int) -> float:
    rounds = max(1, total_bytes // len(chunk))
    start = time.perf_counter()
    for _ in range(rounds):
        crc32c.crc32c(chunk)
    return (time.perf_counter() - start) * total_bytes / (rounds * len(chunk))


def _recover(directory: str) -> tuple[float, Log]:
    start = time.perf_counter()
    log = Log(directory, LogConfig(), clock_ms=lambda: 0, recover_from_start=True)
    return time.perf_counter() - start, log


def _recovery_rows(directory: str, log: Log, label: str, progress) -> tuple[list[dict], dict]:
    total = log.size_bytes
    total_mb = total / MIB
    task = progress.add_task(f"recovery scan of {label} log", total=2 * REPEATS)
    baselines, scans = [], []
    chunk = os.urandom(64 * MIB)
    peaks = []
    for _ in range(REPEATS):
        log.crash()  # unclean: no marker, so opening recovers (the data itself was flushed)
        baselines.append(_crc_in_memory(chunk, total))
        progress.advance(task)
        with PeakMemory() as memory:
            seconds, log = _recover(directory)
        report = log.recovery
        if report.bytes_scanned != total or report.bytes_truncated:
            raise RuntimeError(f"recovery did not scan the whole log cleanly: {report}")
        scans.append(seconds)
        peaks.append(memory.peak_mib)
        progress.advance(task)
    log.close()
    baseline, seconds = min(baselines), min(scans)
    rows = [
        {"phase": f"recovery, {label}", "method": name, "MB": round(total_mb),
         "seconds": s, "MB/s": total_mb / s, "vs baseline": baseline / s}
        for name, s in (("crc32c in memory", baseline), ("Log recovery scan from disk", seconds))
    ]
    key = label.split(",")[0].replace(" ", "").lower()
    figures = {
        f"recovery_{key}_mb_per_s": total_mb / seconds,
        f"recovery_{key}_ratio_vs_crc32c_in_memory": baseline / seconds,
        f"recovery_{key}_peak_rss_mib": max(peaks),
    }
    return rows, figures


def bench_storage(progress=None) -> dict:
    """Run every storage benchmark; see the module docstring. progress: a progress display
    (impl/progress.py; `kafkaref bench` hands in a bar)."""
    root = tempfile.mkdtemp(prefix="kafkaref-bench-storage-")
    rows, figures = [], {}
    try:
        with progress or SilentProgress() as progress:
            more_rows, more = _append_rows(root, progress)
            rows += more_rows
            figures.update(more)
            big = os.path.join(root, "big")
            log = _build_log(big, _batch(1024), RECOVERY_BYTES, progress, "1 GiB")
            more_rows, more = _read_rows(log, progress)
            rows += more_rows
            figures.update(more)
            more_rows, more = _recovery_rows(big, log, "1GiB, 1 MiB batches", progress)
            rows += more_rows
            figures.update(more)
            shutil.rmtree(big)
            small = os.path.join(root, "small")
            log = _build_log(small, _batch(16), SMALL_RECOVERY_BYTES, progress, "256 MiB")
            more_rows, more = _recovery_rows(small, log, "256MiB, 16 KiB batches", progress)
            rows += more_rows
            figures.update(more)
        figures["process_peak_rss_mib"] = _max_rss_mib()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"title": "kafkaref storage: commit log vs raw file I/O (same run)", "rows": rows,
            "figures": figures}


def _max_rss_mib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

"""ControllerServer: ControllerState behind a socket, one thread per broker connection."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading

from kafkaref.impl.clock import monotonic_ms
from kafkaref.impl.controller.channel import recv_message, send_message
from kafkaref.impl.controller.config import BATCH_MAX_MESSAGES, DEFAULT_SESSION_TIMEOUT_MS
from kafkaref.impl.controller.state import ControllerState
from kafkaref.impl.core.metadata import ClusterMetadata, metadata_from_dict, metadata_to_dict

log = logging.getLogger(__name__)



class ControllerServer:
    def __init__(self, host: str = "127.0.0.1", port: int = 0, session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
                 unclean_election: bool = False, snapshot_path: str | None = None,
                 tick_ms: int = 50, mutants=frozenset()):
        self.snapshot_path = snapshot_path
        self.lock = threading.Lock()
        self.applied_epoch: dict[int, int] = {}  # broker id -> the epoch it last reported
        # liveness as the controller sees it: the longest gap between two messages of a broker
        # (kafkaref bench liveness compares it with the session timeout)
        self.last_message_ms: dict[int, int] = {}
        self.longest_silence_ms: dict[int, int] = {}
        self.state = ControllerState(monotonic_ms, session_timeout_ms, unclean_election,
                                     self._load_snapshot(), on_change=self._save_snapshot,
                                     mutants=mutants)  # M14 acts here (impl/mutants.py)
        self.stopping = threading.Event()
        self.sock = socket.create_server((host, port))
        self.sock.settimeout(0.1)
        self.address = f"{host}:{self.sock.getsockname()[1]}"
        self.tick_ms = tick_ms
        self.threads: list[threading.Thread] = []

    def start(self) -> ControllerServer:
        for target in (self._accept_loop, self._tick_loop):
            thread = threading.Thread(target=target, daemon=True, name="kafkaref-controller")
            thread.start()
            self.threads.append(thread)
        return self

    def shutdown(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(5)
        self.sock.close()

    def metadata(self) -> ClusterMetadata:
        with self.lock:
            return self.state.metadata

    # -- snapshot -----------------------------------------------------------------------------
    def _load_snapshot(self) -> ClusterMetadata | None:
        if not self.snapshot_path or not os.path.exists(self.snapshot_path):
            return None
        try:
            with open(self.snapshot_path) as f:
                return metadata_from_dict(json.load(f))
        except (ValueError, KeyError, TypeError) as exc:
            log.error("ignoring unreadable controller snapshot %s: %s", self.snapshot_path, exc)
            return None

    def _save_snapshot(self, metadata: ClusterMetadata) -> None:
        if not self.snapshot_path:
            return
        tmp = self.snapshot_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(metadata_to_dict(metadata), f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.snapshot_path)

    # -- threads ------------------------------------------------------------------------------
    def _tick_loop(self) -> None:
        while not self.stopping.wait(self.tick_ms / 1000):
            with self.lock:
                self.state.tick()

    def _accept_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(1.0)
        try:
            while not self.stopping.is_set():
                try:
                    message = recv_message(conn)
                except TimeoutError:
                    continue
                if message is None:
                    return
                send_message(conn, self._answer(message))
        except (OSError, ValueError) as exc:
            log.info("controller connection closed: %s", exc)
        except Exception:  # noqa: BLE001 -- one bad channel must not take the controller down
            log.exception("controller channel failed")
        finally:
            conn.close()

    def _applied_by_others(self, epoch: int, asking) -> bool:
        """Has every live broker but `asking` reported metadata epoch >= epoch?"""
        return all(self.applied_epoch.get(b, -1) >= epoch for b in self.state.alive
                   if b != asking)

    def _note_message(self, broker_id: int) -> None:
        now = monotonic_ms()
        if broker_id in self.last_message_ms:
            silence = now - self.last_message_ms[broker_id]
            self.longest_silence_ms[broker_id] = max(silence,
                                                     self.longest_silence_ms.get(broker_id, 0))
        self.last_message_ms[broker_id] = now

    def reset_silences(self) -> None:
        with self.lock:
            self.longest_silence_ms.clear()
            self.last_message_ms.clear()

    def _answer(self, message: dict) -> dict:
        """The answer to one message, or to a batch of them ({"type": "batch", "messages":
        [...]} -> {"answers": [...]}): a broker sends what queued up while it waited, so a
        CreateTopics of 100 topics is one round trip carrying one metadata image, not 100
        round trips each carrying the whole (growing) image."""
        with self.lock:
            known = message.get("metadata_epoch", -1)
            if message.get("type") == "batch":
                messages = message.get("messages")
                if not isinstance(messages, list) or len(messages) > BATCH_MAX_MESSAGES or not all(
                        isinstance(m, dict) for m in messages):
                    answer = {"error": -1, "message": f"bad batch: a list of at most {BATCH_MAX_MESSAGES} "
                              "messages expected"}
                else:
                    answer = {"answers": [self._decide(m, known) for m in messages]}
            else:
                answer = self._decide(message, known)
            if self.state.metadata.epoch != known:
                answer["metadata"] = metadata_to_dict(self.state.metadata)
        return answer

    def _decide(self, message: dict, known) -> dict:
        """One message's answer, without the metadata image (called under the lock)."""
        kind = message.get("type")
        state = self.state
        if isinstance(message.get("broker_id"), int) and isinstance(known, int):
            self.applied_epoch[message["broker_id"]] = known
            self._note_message(message["broker_id"])
        try:
            if kind in TOPIC_CHANGES:
                error, text = TOPIC_CHANGES[kind](state, message)
                return {"error": int(error), "message": text}
            if kind == "register":
                state.register(int(message["broker_id"]), message["host"], int(message["port"]))
                return {"error": 0}
            if kind == "heartbeat":
                ok = state.heartbeat(int(message["broker_id"]))
                return {"error": 0 if ok else -1, "reregister": not ok}
            if kind == "alter_isr":
                error = state.alter_isr(int(message["broker_id"]), message["topic"],
                                        int(message["partition"]),
                                        int(message["leader_epoch"]), message["isr"])
                return {"error": int(error)}
            if kind == "create_topic":
                error, text = state.create_topic(message["name"], int(message["partitions"]),
                                                 int(message["replication_factor"]),
                                                 dict(message.get("configs") or {}),
                                                 message.get("assignment"))
                return {"error": int(error), "message": text}
            if kind == "await_epoch":
                # a broker polling for its creations' propagation is alive: a heartbeat
                ok = state.heartbeat(int(message["broker_id"]))
                return {"error": 0 if ok else -1, "reregister": not ok,
                        "applied": self._applied_by_others(int(message["epoch"]),
                                                           message["broker_id"])}
            return {"error": -1, "message": f"unknown message type {kind!r}"}
        except (KeyError, TypeError, ValueError) as exc:
            return {"error": -1, "message": f"bad message: {exc}"}


# Admin requests a broker forwards (ControllerClient): message type -> the state's decision.
TOPIC_CHANGES = {
    "delete_topic": lambda state, m: state.delete_topic(str(m["name"])),
    "create_partitions": lambda state, m: state.create_partitions(
        str(m["name"]), int(m["count"]),
        None if m.get("assignment") is None else [[int(b) for b in r] for r in m["assignment"]]),
    "alter_configs": lambda state, m: state.alter_configs(
        str(m["name"]), {str(k): str(v) for k, v in dict(m["configs"]).items()}),
}

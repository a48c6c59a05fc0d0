"""--kill-cmd / --restart-cmd / --tear-cmd for a LocalCluster, as a user would write them for
`kafkaref conform`: a shell script that SIGKILLs the broker named by $CONFORM_BROKER_ID, starts
it again with the same command line (its pid kept in DIR/broker-N.pid), and tears the last
write of partition $CONFORM_TOPIC-$CONFORM_PARTITION in its data directory while it is stopped
(`kafkaref chaos tear`, chaos/nemesis.py tear_last_write)."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import sys
import time


@contextlib.contextmanager
def fault_commands(cluster, directory: str):
    """(kill command, restart command, tear command); on exit, brokers the script restarted
    are stopped."""
    originals = {i: p.pid for i, p in cluster.processes.items()}
    for broker_id, pid in originals.items():
        with open(os.path.join(directory, f"broker-{broker_id}.pid"), "w") as f:
            f.write(str(pid))
    restarts = "\n".join(
        f"    {i}) {shlex.join(command)} >> {directory}/restart-{i}.log 2>&1 &;;"
        for i, command in cluster.commands.items())
    kafkaref = os.path.join(os.path.dirname(sys.executable), "kafkaref")
    tears = "\n".join(
        f"    {i}) {shlex.quote(kafkaref)} chaos tear --data-dir "
        f"{shlex.quote(_data_dir(command))} --topic \"$CONFORM_TOPIC\" "
        f"--partition \"$CONFORM_PARTITION\" ;;"
        for i, command in cluster.commands.items())
    script = os.path.join(directory, "faults.sh")
    with open(script, "w") as f:
        f.write(f"""#!/bin/sh
# $1: kill | restart | tear; $CONFORM_BROKER_ID: which broker (set by kafkaref conform);
# tear: $CONFORM_TOPIC and $CONFORM_PARTITION, the broker stopped
set -e
pid_file={directory}/broker-$CONFORM_BROKER_ID.pid
case "$1" in
  kill) kill -9 "$(cat "$pid_file")" ;;
  restart)
    case "$CONFORM_BROKER_ID" in
{restarts}
      *) echo "no broker $CONFORM_BROKER_ID" >&2; exit 1 ;;
    esac
    echo $! > "$pid_file" ;;
  tear)
    case "$CONFORM_BROKER_ID" in
{tears}
      *) echo "no broker $CONFORM_BROKER_ID" >&2; exit 1 ;;
    esac ;;
esac
""")
    os.chmod(script, 0o755)
    try:
        yield f"{script} kill", f"{script} restart", f"{script} tear"
    finally:
        for broker_id, original in originals.items():
            try:
                pid = int(open(os.path.join(directory, f"broker-{broker_id}.pid")).read())
            except (OSError, ValueError):
                continue
            if pid != original:
                stop_pid(pid)


def stop_pid(pid: int, timeout_s: float = 10.0) -> None:
    """SIGTERM a broker the script restarted (not our child: its shell has exited) and wait until
    it is gone, SIGKILL after timeout_s; returning earlier let the caller remove the data
    directory while the broker still wrote into it ("Directory not empty")."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not _alive(pid):
                return
            time.sleep(0.05)


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie waiting for its (re)parent to reap it."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _data_dir(command: list[str]) -> str:
    """The --data-dir of a broker's command line."""
    return command[command.index("--data-dir") + 1]

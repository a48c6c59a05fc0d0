"""--kill-cmd / --restart-cmd for a LocalCluster, as a user would write them for `kafkaref
conform`: a shell script that SIGKILLs the broker named by $CONFORM_BROKER_ID and starts it
again with the same command line (its pid kept in DIR/broker-N.pid)."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal


@contextlib.contextmanager
def fault_commands(cluster, directory: str):
    """(kill command, restart command); on exit, brokers the script restarted are stopped."""
    originals = {i: p.pid for i, p in cluster.processes.items()}
    for broker_id, pid in originals.items():
        with open(os.path.join(directory, f"broker-{broker_id}.pid"), "w") as f:
            f.write(str(pid))
    restarts = "\n".join(
        f"    {i}) {shlex.join(command)} >> {directory}/restart-{i}.log 2>&1 &;;"
        for i, command in cluster.commands.items())
    script = os.path.join(directory, "faults.sh")
    with open(script, "w") as f:
        f.write(f"""#!/bin/sh
# $1: kill | restart; $CONFORM_BROKER_ID: which broker (set by kafkaref conform)
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
esac
""")
    os.chmod(script, 0o755)
    try:
        yield f"{script} kill", f"{script} restart"
    finally:
        for broker_id, original in originals.items():
            try:
                pid = int(open(os.path.join(directory, f"broker-{broker_id}.pid")).read())
            except (OSError, ValueError):
                continue
            if pid != original:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)

"""The user's fault commands (--kill-cmd, --restart-cmd), run with a bound, and waiting for the
broker to serve again afterwards."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import time

from kio.schema.errors import ErrorCode

from kafkaref.chaos.conform.catalogue import Skip
from kafkaref.chaos.conform.probe import Probe

COMMAND_TIMEOUT_S = 60


def replica_faults(probe: Probe, single_node: str, needs: str) -> tuple[str, str]:
    """(--kill-cmd, --restart-cmd) for a check that stops a replica; Skip when the broker does
    not replicate (single_node: what that rules out) or no fault commands were given (needs:
    what the check wants them for)."""
    if probe.broker_count() < 2:
        raise Skip(f"single-node broker: {single_node}")
    kill, restart = probe.options.get("kill_cmd"), probe.options.get("restart_cmd")
    if not kill or not restart:
        raise Skip(f"needs --kill-cmd / --restart-cmd {needs}")
    return kill, restart


def run_command(command: str, what: str, probe: Probe, target=None,
                extra_env: dict[str, str] | None = None) -> None:
    """Run a fault command (split like a shell would; use `sh -c '...'` for pipes); a non-zero
    exit fails the check with its stderr. target = (broker id, host, port) the check wants
    stopped or restarted, passed as CONFORM_BROKER_ID / _HOST / _PORT in the environment (a
    command that always kills the same broker may ignore them); extra_env adds more
    (--tear-cmd gets CONFORM_TOPIC and CONFORM_PARTITION)."""
    env = dict(os.environ)
    if target is not None:
        env.update(CONFORM_BROKER_ID=str(target[0]), CONFORM_BROKER_HOST=target[1],
                   CONFORM_BROKER_PORT=str(target[2]))
    env.update(extra_env or {})
    try:
        done = subprocess.run(shlex.split(command), capture_output=True, env=env,
                              timeout=COMMAND_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise probe.fail(f"{what} did not finish in {COMMAND_TIMEOUT_S} s",
                         expected="the command returns") from None
    probe.expect(done.returncode == 0, f"{what} exited {done.returncode}",
                 response=done.stderr.decode(errors="replace")[-400:], expected="exit 0")
    probe.forget_leaders()


def serves(probe: Probe, address: tuple[str, int] | None = None) -> bool:
    """A fresh connection (to address, or the bootstrap) is answered ApiVersions NONE."""
    try:
        conn = probe.connect(address)
        answer = conn.call(18, {"client_software_name": "c", "client_software_version": "1"})
        conn.close()
        return answer.error_code == ErrorCode.none
    except (OSError, ValueError):
        return False


def wait_serving(probe: Probe, target=None, timeout_s: float = 60.0) -> None:
    """Until the bootstrap -- and the restarted broker target (id, host, port), if given --
    answer ApiVersions."""
    deadline = time.monotonic() + timeout_s
    while not serves(probe) or (target is not None and not serves(probe, target[1:])):
        probe.expect(time.monotonic() < deadline, f"the broker does not serve {timeout_s:.0f} s "
                     "after --restart-cmd", expected="ApiVersions answered")
        time.sleep(0.5)


def down(address: tuple[str, int], timeout_s: float = 10.0) -> bool:
    """Nothing accepts connections at address within timeout_s (the broker stopped: a killed
    process keeps its listening socket until it has exited)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(address, timeout=1).close()
        except OSError:
            return True
        time.sleep(0.05)
    return False

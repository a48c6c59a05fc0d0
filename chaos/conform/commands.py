"""The user's fault commands (--kill-cmd, --restart-cmd), run with a bound, and waiting for the
broker to serve again afterwards."""

from __future__ import annotations

import shlex
import subprocess
import time

from kio.schema.errors import ErrorCode

from kafkaref.chaos.conform.probe import Probe

COMMAND_TIMEOUT_S = 60


def run_command(command: str, what: str, probe: Probe) -> None:
    """Run a fault command (split like a shell would; use `sh -c '...'` for pipes); a non-zero
    exit fails the check with its stderr."""
    try:
        done = subprocess.run(shlex.split(command), capture_output=True,
                              timeout=COMMAND_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise probe.fail(f"{what} did not finish in {COMMAND_TIMEOUT_S} s",
                         expected="the command returns") from None
    probe.expect(done.returncode == 0, f"{what} exited {done.returncode}",
                 response=done.stderr.decode(errors="replace")[-400:], expected="exit 0")
    probe.forget_leaders()


def serves(probe: Probe) -> bool:
    """A fresh connection to the bootstrap is answered ApiVersions NONE."""
    try:
        conn = probe.connect()
        answer = conn.call(18, {"client_software_name": "c", "client_software_version": "1"})
        conn.close()
        return answer.error_code == ErrorCode.none
    except (OSError, ValueError):
        return False


def wait_serving(probe: Probe, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not serves(probe):
        probe.expect(time.monotonic() < deadline, f"the broker does not serve {timeout_s:.0f} s "
                     "after --restart-cmd", expected="ApiVersions answered")
        time.sleep(0.5)

"""Things a peer needs that are fetched by coordinates with their ecosystem's own tool (Maven for
Apache Kafka, pip for Tansu's wheel, the go command for kfake), into a cache outside git that
later runs reuse.

The cache is ~/.cache/kafkaref (KAFKAREF_CACHE overrides it). Each fetched thing lands in a
folder named after what was asked for (a digest of the pom, or the wheel's name and version) and
is marked complete only once the tool succeeded, so an interrupted fetch is redone, never used
half-written.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

COMPLETE = ".complete"
FETCH_TIMEOUT_S = 900


class PeerError(RuntimeError):
    """A peer cannot be fetched, started, or faulted; the message is one line saying what to do."""


def cache_root() -> str:
    return os.environ.get("KAFKAREF_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "kafkaref")


def _complete(folder: str) -> bool:
    return os.path.exists(os.path.join(folder, COMPLETE))


def _publish(staging: str, folder: str) -> None:
    """Move a finished fetch into place; a concurrent fetch that won the race is kept."""
    open(os.path.join(staging, COMPLETE), "w").close()
    try:
        os.rename(staging, folder)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not _complete(folder):
            raise


def _run(command: list[str], what: str, hint: str) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S,
                              check=False)
    except FileNotFoundError:
        raise PeerError(f"{command[0]} is not installed: {hint}") from None
    except subprocess.TimeoutExpired:
        raise PeerError(f"{what} did not finish in {FETCH_TIMEOUT_S} s: {hint}") from None
    if done.returncode != 0:
        lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
        errors = [line for line in lines if "ERROR" in line] or lines
        last = errors[0].strip() if errors else "no output"
        raise PeerError(f"{what} failed (exit {done.returncode}): {last[:300]} -- {hint}")


def maven_classpath(pom_path: str) -> str:
    """The folder of jars that `pom_path`'s dependencies resolve to (fetched once with
    `mvn dependency:copy-dependencies`), as a Java classpath ("DIR/*")."""
    with open(pom_path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    folder = os.path.join(cache_root(), "maven", digest)
    if not _complete(folder):
        os.makedirs(os.path.dirname(folder), exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".fetching-", dir=os.path.dirname(folder))
        try:
            _run(["mvn", "-B", "-q", "-f", pom_path, "dependency:copy-dependencies",
                  f"-DoutputDirectory={staging}/lib"],
                 f"resolving {os.path.basename(pom_path)} with Maven",
                 "Maven Central must be reachable (mvn -v works, ~/.m2/settings.xml mirrors)")
            _publish(staging, folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return os.path.join(folder, "lib", "*")


def pip_package(requirement: str, module: str) -> str:
    """The folder of `module` from `requirement` (name==version), installed once with pip into
    the cache (--no-deps: peers only need the files the wheel carries)."""
    folder = os.path.join(cache_root(), "pip", requirement.replace("==", "-"))
    if not _complete(folder):
        os.makedirs(os.path.dirname(folder), exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".fetching-", dir=os.path.dirname(folder))
        try:
            _run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                  "--disable-pip-version-check", "--target", staging, requirement],
                 f"pip install {requirement}", "PyPI must be reachable")
            _publish(staging, folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return os.path.join(folder, module)


def go_binary(main_dir: str, name: str) -> str:
    """`go build` of the small Go main in main_dir (its go.mod and go.sum pin every module, which
    the go command fetches from the module proxy), once, into the cache; the binary's path.
    The cache folder is named after a digest of main_dir's files, so a new pin is a new build."""
    digest = hashlib.sha256()
    for file_name in sorted(os.listdir(main_dir)):
        with open(os.path.join(main_dir, file_name), "rb") as f:
            digest.update(file_name.encode() + b"\0" + f.read())
    folder = os.path.join(cache_root(), "go", f"{name}-{digest.hexdigest()[:16]}")
    if not _complete(folder):
        os.makedirs(os.path.dirname(folder), exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".fetching-", dir=os.path.dirname(folder))
        try:
            # -C: build where go.mod is; -mod=readonly: go.sum must already pin everything
            _run(["go", "build", "-C", main_dir, "-mod=readonly", "-trimpath",
                  "-o", os.path.join(staging, name), "."],
                 f"go build of {name}",
                 "Go 1.26 and the Go module proxy must be reachable (go version works)")
            _publish(staging, folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return os.path.join(folder, name)


def java_major_version(java: str = "java") -> int:
    """The major version of `java` (17 for "17.0.15"); PeerError when there is none."""
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60,
                              check=False)
    except FileNotFoundError:
        raise PeerError("java is not installed: Apache Kafka 4 needs Java 17 or newer "
                        "(Debian: apt-get install openjdk-17-jre-headless)") from None
    for token in done.stderr.replace('"', " ").split():
        head = token.split(".")[0]
        if head.isdigit() and "." in token:
            return int(head)
    raise PeerError(f"cannot read the Java version from `{java} -version`: "
                    f"{done.stderr.strip()[:200]}")

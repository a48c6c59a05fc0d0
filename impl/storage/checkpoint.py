"""Small durable files: written to a temp file, fsynced, renamed over the old one, dir fsynced.

A reader sees either the old or the new content, never a mix. Files use Kafka's checkpoint
layout: a version line, a count line, then one entry per line. Readers return None for a missing
or malformed file instead of raising, so recovery can fall back to a safe default.
"""

import os

from kafkaref.impl.storage.config import CHECKPOINT_MAX_BYTES, CHECKPOINT_MAX_ENTRIES

CHECKPOINT_VERSION = 0


def write_atomically(path: str, text: str) -> None:
    """Replace path's content with text so that a crash leaves the old or the new version."""
    temp_path = path + ".tmp"
    fd = os.open(temp_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, text.encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp_path, path)
    fsync_directory(os.path.dirname(path) or ".")


def fsync_directory(path: str) -> None:
    """Make a rename or a file creation in `path` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_entries(path: str, entries: list[tuple[object, int]]) -> None:
    """Write (key, int) entries in Kafka's checkpoint format."""
    lines = [str(CHECKPOINT_VERSION), str(len(entries))]
    lines += [f"{key} {value}" for key, value in entries]
    write_atomically(path, "\n".join(lines) + "\n")


def read_entries(path: str) -> list[tuple[str, int]] | None:
    """Entries of a checkpoint file; None if missing, unreadable or malformed in any way."""
    try:
        if os.path.getsize(path) > CHECKPOINT_MAX_BYTES:
            return None
        with open(path, "rb") as file:
            lines = file.read().decode("ascii").split("\n")
    except (OSError, UnicodeDecodeError):
        return None
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2 or lines[0] != str(CHECKPOINT_VERSION):
        return None
    try:
        count = int(lines[1])
    except ValueError:
        return None
    if not 0 <= count <= CHECKPOINT_MAX_ENTRIES or len(lines) != count + 2:
        return None
    entries = []
    for line in lines[2:]:
        parts = line.split(" ")
        if len(parts) != 2:
            return None
        try:
            entries.append((parts[0], int(parts[1])))
        except ValueError:
            return None
    return entries

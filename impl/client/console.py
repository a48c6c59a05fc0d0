"""What the console producer does with its input, as kafka-console-producer: stdin read in
chunks of complete lines, each line a record, optionally KEY<separator>VALUE."""

from __future__ import annotations


def ready_lines(stream, chunk_bytes: int = 1 << 20):
    """Lists of the complete lines stdin has ready (one read1 each: a line typed at a terminal
    goes out at once, a piped file in chunks of about chunk_bytes), without line endings; a
    last line without a newline comes at EOF."""
    tail = b""
    while True:
        chunk = stream.read1(chunk_bytes)
        if not chunk:
            break
        lines = (tail + chunk).split(b"\n")
        tail = lines.pop()
        if lines:
            yield [line.rstrip(b"\r") for line in lines]
    if tail:
        yield [tail.rstrip(b"\r")]


def split_keys(lines: list, separator: bytes | None):
    """(values, keys) for lines; keys None when no separator is given (a line without the
    separator has no key, as in kafka-console-producer with parse.key)."""
    if separator is None:
        return lines, None
    values, keys = [], []
    for line in lines:
        key, sep, value = line.partition(separator)
        keys.append(key if sep else None)
        values.append(value if sep else line)
    return values, keys

"""Kafka's checkpoint text format, read back as Kafka's CheckpointFile reads it: the version line,
the count line, then one `key value` line per entry. Kafka reads it line by line
(BufferedReader.readLine), so a last line without its newline is read like any other; a count
that does not match the lines, a wrong version or a value that is not a number makes the whole
file unreadable (None: the caller starts from what the log itself says).

Found by mutation testing (docs/mutation.md): the reader's `lines and lines[-1] == ""` read as
`or` dropped the last entry of a file without a final newline, and no test wrote one."""

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaref.impl.storage.checkpoint import read_entries, write_entries

keys = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=1, max_size=12)
entries_lists = st.lists(st.tuples(keys, st.integers(-(2**63), 2**63 - 1)), max_size=20)
few = settings(max_examples=25)  # each example writes a file with fsyncs (write_atomically)


@few
@given(entries=entries_lists)
def test_a_checkpoint_reads_back_with_or_without_its_final_newline(tmp_path_factory, entries):
    path = str(tmp_path_factory.mktemp("cp") / "checkpoint")
    write_entries(path, entries)
    assert read_entries(path) == entries
    with open(path, "rb") as file:
        text = file.read()
    with open(path, "wb") as file:
        file.write(text.rstrip(b"\n"))
    assert read_entries(path) == entries


@few
@given(entries=entries_lists.filter(bool), cut=st.sampled_from(["count", "version", "value"]))
def test_a_malformed_checkpoint_is_unreadable_as_a_whole(tmp_path_factory, entries, cut):
    path = str(tmp_path_factory.mktemp("cp") / "checkpoint")
    write_entries(path, entries)
    with open(path) as file:
        lines = file.read().split("\n")
    if cut == "count":
        lines[1] = str(len(entries) + 1)
    elif cut == "version":
        lines[0] = "1"
    else:
        lines[2] = lines[2].split(" ")[0] + " x"
    with open(path, "w") as file:
        file.write("\n".join(lines))
    assert read_entries(path) is None

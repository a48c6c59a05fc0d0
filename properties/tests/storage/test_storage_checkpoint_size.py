"""A checkpoint file as large as a real broker's reads back whole: the size bound that guards
against a corrupt file (CHECKPOINT_MAX_BYTES) sits far above any file a broker writes. Found by
mutation testing (docs/mutation.md): the bound cut to 64 bytes (a * read as /) passed every
storage test, whose checkpoints all stayed smaller."""

from kafkaref.impl.storage.checkpoint import read_entries, write_entries


def test_a_checkpoint_of_ten_thousand_entries_reads_back(tmp_path):
    entries = [(str(i % 50), i * 1_000) for i in range(10_000)]
    path = str(tmp_path / "leader-epoch-checkpoint")
    write_entries(path, entries)
    assert read_entries(path) == entries

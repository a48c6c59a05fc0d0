"""`kafkaref mutants` at the smoke size on the core level: the checks are clean without
mutants, every possible mutant gets a row, and the detections we rely on still happen."""

from click.testing import CliRunner

from kafkaref.impl.mutants import Mutant
from kafkaref.properties.mutant_matrix import BUDGETS, format_matrix, run_matrix

# Every possible mutant but M9 is caught at this size by the deterministic machines: the model
# lockstep on the core (M1-M5, M10, M11, M14, M15: M5 and M15 through the shape rules
# stall_follower, catch_up_below_hw, elect_lagging_isr_member) or the storage machine (M6-M8,
# M13). M9 (server layer) needs the threaded lockstep: `kafkaref mutants --mutant M9`, left out
# here to keep the default run small (the threaded lockstep itself runs in the cluster tests).
CAUGHT_AT_CORE = {m for m in Mutant if m.possible and m is not Mutant.M9}


def test_core_matrix_at_smoke_size():
    """The mutants the core checks must catch (a full run, every mutant at the ci budget with
    shrinking and M9 on threaded brokers, is `kafkaref mutants`: docs/lockstep.md)."""
    lines = []
    matrix = run_matrix(("core",), BUDGETS["smoke"], CAUGHT_AT_CORE, progress=lines.append)
    assert [f.caught for f in matrix.baseline] == [False] * len(matrix.baseline)
    assert {r.mutant for r in matrix.rows} == CAUGHT_AT_CORE
    caught = {r.mutant for r in matrix.rows if r.caught}
    assert caught == CAUGHT_AT_CORE, f"no longer caught: {CAUGHT_AT_CORE - caught}"
    for row in matrix.rows:
        # M14 fails already at the initial election: 0 rule steps
        assert row.finding.steps >= 0 and row.finding.detect_s <= row.finding.total_s
    text = "\n".join(format_matrix(matrix))
    n = len(CAUGHT_AT_CORE)
    assert f"caught {n} of {n} mutants" in text and any(f"[1/{n}]" in line for line in lines)


def test_mutants_command_lists_the_registry_and_refuses_unknown_codes():
    from kafkaref.commands.main import main

    result = CliRunner().invoke(main, ["mutants", "--list"])
    assert result.exit_code == 0 and "M15" in result.output and "no partition lock" in result.output
    assert "M12" in result.output
    result = CliRunner().invoke(main, ["mutants", "--mutant", "M99"])
    assert result.exit_code == 2 and "unknown mutant" in result.output

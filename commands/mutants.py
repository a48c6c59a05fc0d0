"""`kafkaref mutants`: run every deliberate fault against the checks; print who caught what."""

from __future__ import annotations

import json
import sys

import click

from kafkaref.properties.mutant_matrix import BUDGETS, LEVELS


@click.command("mutants")
@click.option("--level", "levels", type=click.Choice(LEVELS), multiple=True,
              help="Which checks to run (repeatable): core = in-process machines (default), "
                   "broker = threaded brokers on 127.0.0.1, chaos = process clusters under the "
                   "chaos job's faults (chaos/run.py, twin checker).")
@click.option("--budget", type=click.Choice(sorted(BUDGETS)), default="ci", show_default=True,
              help="How long each machine walks: smoke (150 examples x 40 steps, no "
                   "shrinking), small (40 x 30), ci (150 x 40), deep (1500 x 80).")
@click.option("--mutant", "mutants", multiple=True, metavar="CODE",
              help="Only these mutants (repeatable; default: every one).")
@click.option("--json", "as_json", is_flag=True, help="Print the matrix as JSON on stdout.")
@click.option("--list", "list_only", is_flag=True,
              help="Print the registry (code, layer, client observable, what it breaks).")
def mutants_command(levels, budget, mutants, as_json, list_only):
    """Run each registered mutant (impl/mutants.py) against the checks and print a detection
    matrix: what it breaks, caught or not, by which check, time to detection, and the length of
    the shrunk counterexample. Progress goes to stderr.

    \b
    Exit codes: 0 every mutant run was caught and every check was clean without mutants;
    1 some mutant escaped or a check failed on the correct code; 2 bad arguments.
    """
    from kafkaref.impl.mutants import Mutant, parse_mutants
    from kafkaref.properties.mutant_matrix import _quiet_logging, format_matrix, run_matrix

    if list_only:
        _print_registry(Mutant, as_json)
        return
    try:
        chosen = parse_mutants(mutants) if mutants else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--mutant") from None
    levels = levels or ("core",)
    if "chaos" in levels:
        click.echo("note: the chaos level runs a process cluster per mutant (plus a baseline), "
                   "each for 15-120 s of faults by budget", err=True)

    def progress(line):
        click.echo(line, err=True)

    with _quiet_logging():
        matrix = run_matrix(levels, BUDGETS[budget], chosen, progress)
    if as_json:
        json.dump(matrix.to_json(), sys.stdout, indent=1)
        click.echo()
    else:
        for line in format_matrix(matrix):
            click.echo(line)
    escaped = [r for r in matrix.rows if r.mutant.possible and not r.caught]
    sys.exit(1 if escaped or any(f.caught for f in matrix.baseline) else 0)


def _print_registry(mutant_enum, as_json: bool) -> None:
    from kafkaref.impl.mutants import M12_ABSENT

    rows = [{"code": m.code, "layer": m.layer, "client_observable": m.client_observable,
             "possible": m.possible, "breaks": m.breaks} for m in mutant_enum]
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    click.echo(f"{'code':<5} {'layer':<11} {'client':<6}  breaks")
    for row in rows:
        client = "yes" if row["client_observable"] else "no"
        click.echo(f"{row['code']:<5} {row['layer']:<11} {client:<6}  {row['breaks']}")
    click.echo(f"\n{M12_ABSENT}")


@click.command("scenarios")
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.option("--rewrite", is_flag=True,
              help="Write the outputs the code printed back into the files (also "
                   "KAFKAREF_REWRITE=1); review them with `git diff`.")
@click.option("--slow/--no-slow", default=True, show_default=True,
              help="Include transcripts marked `# slow` (spec explorations at 3 replicas).")
def scenarios_command(files, rewrite, slow):
    """Replay scenario transcripts (default: every file in properties/scenarios/) against the
    model, the core and the explorers, and report the blocks whose output differs.

    \b
    Exit codes: 0 every block matched (or was rewritten); 1 some output differs; 2 bad
    arguments or a malformed transcript.
    """
    import os

    from kafkaref.properties.transcripts import is_slow, replay, scenario_files

    rewrite = rewrite or os.environ.get("KAFKAREF_REWRITE") == "1"
    paths = list(files) or [p for p in scenario_files() if slow or not is_slow(p)]
    differing = 0
    for path in paths:
        click.echo(f"{os.path.basename(path)} ...", err=True, nl=False)
        try:
            mismatches = replay(path, rewrite=rewrite)
        except ValueError as exc:
            click.echo(f" malformed: {exc}", err=True)
            sys.exit(2)
        differing += 0 if rewrite else len(mismatches)
        state = "rewritten" if rewrite and mismatches else (
            f"{len(mismatches)} differ" if mismatches else "ok")
        click.echo(f" {state}", err=True)
        for m in [] if rewrite else mismatches:
            click.echo(f"{path}:{m.line}: {m.command}\n--- expected\n{m.expected}\n"
                       f"--- got\n{m.actual}\n")
    sys.exit(1 if differing else 0)

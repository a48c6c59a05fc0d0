"""`kafkaref demo`: the main job.

For now the main job is the specification check: explore every variant of the replication
protocol and print which invariant each historical design breaks, with the length of its shortest
counterexample. Later stages (embedded cluster, chaos workload, Spark checks) extend it.
"""

import click


@click.command()
def demo() -> None:
    """Run the main job and print its verdict."""
    from kafkaref.spec.cli import run_demo

    raise SystemExit(run_demo())

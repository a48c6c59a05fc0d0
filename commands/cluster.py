"""`kafkaref cluster --brokers N --dir DIR`: a local cluster of separate OS processes.

The launcher runs the controller (in this process) and N `kafkaref broker --controller ...`
processes on 127.0.0.1, prints the bootstrap address (127.0.0.1:P1,127.0.0.1:P2,...) once every
broker has registered, writes DIR/cluster.json (bootstrap, controller, each broker's pid, port
and command line, so a killed broker can be restarted with the same identity) and DIR/peer.json
(the same cluster as the peer `kafkaref`, so `kafkaref peer kill|restart|pause|resume|tear --dir
DIR --node N` and `kafkaref conform --cluster-dir DIR` fault it), and runs until SIGTERM /
Ctrl-C, when it stops every broker, restarted ones included (SIGTERM, then SIGKILL after a
bound). Broker ports are kept in cluster.json, so restarting the cluster on the same DIR reuses
them. The cluster itself is the library class LocalCluster (impl/server/local_cluster.py) inside
the peer Kafkaref (chaos/peers/kafkaref_cluster.py); this module is only the click command.
"""

from __future__ import annotations

import os
import sys

import click

from kafkaref.commands.broker import mutant_options
from kafkaref.impl.controller.state import DEFAULT_SESSION_TIMEOUT_MS


@click.command()
@click.option("--brokers", type=click.IntRange(1, 32), default=3, show_default=True)
@click.option("--dir", "directory", type=click.Path(file_okay=False), required=True,
              help="Data directory: broker-N/ logs, controller.json, cluster.json.")
@click.option("--session-timeout-ms", type=click.IntRange(100, 600_000),
              default=DEFAULT_SESSION_TIMEOUT_MS, show_default=True,
              help="broker.session.timeout.ms: a broker silent this long is fenced (Kafka's "
                   "default; shorter fails over faster but fences brokers of a starved machine).")
@click.option("--unclean-election", is_flag=True, help="Allow leaders from outside the ISR.")
@click.option("--offsets-topic-partitions", type=click.IntRange(1, 10_000), default=None,
              help="Partitions of __consumer_offsets (default 50, Kafka's).")
@click.option("--num-partitions", type=click.IntRange(1, 10_000), default=None,
              help="num.partitions of every broker: partitions of an auto-created topic "
                   "(default 1).")
@mutant_options
def cluster(brokers, directory, session_timeout_ms, unclean_election, offsets_topic_partitions,
            num_partitions, mutants, allow_deliberate_bugs):
    """Run a local cluster of BROKERS broker processes until SIGTERM.

    Exit codes: 0 stopped by SIGTERM / Ctrl-C; 1 the cluster did not come up; 2 bad arguments
    (including --mutant without --allow-deliberate-bugs)."""
    from kafkaref.chaos.peers import PeerError
    from kafkaref.chaos.peers.kafkaref_cluster import Kafkaref
    from kafkaref.commands.broker import install_stop_handlers, mutants_from_flags, wait_for

    mutants = mutants_from_flags(mutants, allow_deliberate_bugs)
    stop = install_stop_handlers()
    directory = os.path.abspath(directory)
    local = Kafkaref(directory, brokers, keep=True, mutants=mutants, cluster_dir=directory,
                     session_timeout_ms=session_timeout_ms, unclean_election=unclean_election,
                     offsets_topic_partitions=offsets_topic_partitions,
                     num_partitions=num_partitions)
    try:
        local.start()  # stops what it started if it fails
    except (PeerError, RuntimeError, TimeoutError, OSError) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    click.echo(local.bootstrap)
    sys.stdout.flush()
    try:
        wait_for(stop, tick=local.reap)  # brokers killed from other shells are our zombies
    finally:
        local.stop()

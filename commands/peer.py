"""`kafkaref peer`: start a peer broker by name and fault it from any shell (chaos/peers/).

    kafkaref peer start apache-kafka --nodes 3 --dir /tmp/ak   # runs until Ctrl-C / SIGTERM
    kafkaref peer kill --dir /tmp/ak --node 2                  # from another shell
    kafkaref peer restart --dir /tmp/ak --node 2
    kafkaref peer stop --dir /tmp/ak
"""

from __future__ import annotations

import os
import signal
import sys

import click

from kafkaref.chaos.peers import PEER_NAMES

EXIT_PEER_ERROR = 2
EXIT_DOC = """\b
Exit codes: 0 done; 2 the peer could not be fetched, started or faulted (one line says why) or
the arguments are wrong."""


def peer_error(error: Exception) -> None:
    click.echo(f"error: {error}", err=True)
    sys.exit(EXIT_PEER_ERROR)


@click.group(epilog=EXIT_DOC)
def peer():
    """Start a peer broker by name (Apache Kafka, kafkaref, Tansu) on 127.0.0.1 and fault it.

    `start` runs in the foreground until Ctrl-C or SIGTERM and then stops every process of the
    peer (restarted ones included) and removes its directory (unless --keep). The fault commands
    act on a running peer through DIR/peer.json, from any shell."""


@peer.command("list")
def list_command():
    """The peers that can be started, their pinned versions and the faults each takes."""
    from kafkaref.chaos.peers import peer_kinds

    for name, kind in sorted(peer_kinds().items()):
        click.echo(f"{name:<14} {kind.version:<10} faults: {', '.join(sorted(kind.supports))}")


@peer.command("start", epilog=EXIT_DOC)
@click.argument("name", type=click.Choice(PEER_NAMES))
@click.option("--nodes", type=click.IntRange(1, 32), default=None,
              help="Number of nodes (apache-kafka: 1 or 3, default 3; kafkaref: default 3; "
                   "tansu: 1).")
@click.option("--dir", "directory", type=click.Path(file_okay=False), default=None,
              help="The peer's directory (logs, data, peer.json; default a new one in /tmp).")
@click.option("--keep", is_flag=True, help="Leave the directory after stopping.")
def start_command(name, nodes, directory, keep):
    """Start peer NAME and run until Ctrl-C / SIGTERM; prints its bootstrap first."""
    from kafkaref.chaos.peers import PeerError, make_peer
    from kafkaref.commands.broker import install_stop_handlers, wait_for

    stop = install_stop_handlers()
    try:
        started = make_peer(name, nodes, directory and os.path.abspath(directory), keep)
        click.echo(f"starting {started.name} {started.version} ...", err=True)
        started.start()
    except PeerError as error:
        peer_error(error)
    click.echo(started.bootstrap)
    click.echo(f"{started.describe()}; faults: kafkaref peer kill|restart|pause|resume "
               f"--dir {started.directory} --node N", err=True)
    sys.stdout.flush()
    try:
        wait_for(stop, tick=started.reap)  # nodes killed from other shells are our zombies
    finally:
        started.stop()


def _loaded(directory: str):
    from kafkaref.chaos.peers import PeerError, load_peer

    try:
        return load_peer(directory)
    except PeerError as error:
        peer_error(error)


DIR_OPTION = click.option("--dir", "directory", type=click.Path(file_okay=False),
                          required=True, help="The directory of a running peer.")
NODE_OPTION = click.option("--node", type=int, required=True, help="The node's id.")


def _fault(directory: str, node: int, action: str) -> None:
    from kafkaref.chaos.peers import PeerError

    running = _loaded(directory)
    try:
        getattr(running, action)(node)
    except PeerError as error:
        peer_error(error)
    click.echo(f"{action}: node {node} of {running.name}")


# The node faults every peer command line offers: action -> what it does (its --help)
NODE_FAULTS = {
    "kill": "SIGKILL a node; returns once it is gone.",
    "restart": "Start a killed node again (same port, data and identity); returns once it "
               "serves.",
    "pause": "SIGSTOP a node.",
    "resume": "SIGCONT a paused node.",
}


def _fault_command(action: str, help_text: str) -> None:
    """Register `kafkaref peer ACTION --dir D --node N`."""
    def command(directory, node):
        _fault(directory, node, action)

    peer.command(action, help=help_text, epilog=EXIT_DOC)(DIR_OPTION(NODE_OPTION(command)))


for _action, _help in NODE_FAULTS.items():
    _fault_command(_action, _help)


@peer.command("tear", epilog=EXIT_DOC)
@DIR_OPTION
@NODE_OPTION
@click.option("--topic", required=True)
@click.option("--partition", type=click.IntRange(0, 2**31 - 1), default=0, show_default=True)
def tear_command(directory, node, topic, partition):
    """Tear a killed node's last write to TOPIC-PARTITION (its newest segment cut inside its last
    batch, as a power loss mid-write leaves it); restart the node afterwards."""
    from kafkaref.chaos.peers import PeerError

    running = _loaded(directory)
    try:
        click.echo(running.tear(node, topic, partition))
    except PeerError as error:
        peer_error(error)


@peer.command("stop", epilog=EXIT_DOC)
@DIR_OPTION
def stop_command(directory):
    """Stop a running peer: its `start` process (which then stops every node), or, when that
    is gone, every process its peer.json names."""
    import json

    import psutil

    running = _loaded(directory)
    with open(os.path.join(directory, "peer.json")) as f:
        owner = json.load(f).get("owner_pid")
    if owner and owner != os.getpid() and psutil.pid_exists(owner):
        os.kill(owner, signal.SIGTERM)
        psutil.wait_procs([psutil.Process(owner)], timeout=60)
    else:
        running.stop_processes()
    click.echo(f"stopped {running.name} in {directory}")

"""The `kafkaref` command: one front door over every layer.

Each subcommand is a module of this package (commands/explore.py, commands/check.py, ...), a thin
layer over a library call, imported only when invoked: `kafkaref explore` never pays for
importing pyspark, and a command is added by adding one line to COMMANDS.
"""

import importlib

import click

# name -> ("module:attribute" of a click command, one-line summary for `kafkaref --help`).
# The summary lives here so that listing commands imports none of them.
COMMANDS = {
    "demo": ("kafkaref.commands.demo:demo", "Run the main job and print its verdict."),
    "explore": ("kafkaref.commands.explore:explore_command", "Exhaustively explore the replication spec or model."),
    "bench": ("kafkaref.commands.bench:bench", "Run a benchmark and print figures with ratios."),
    "chaos": ("kafkaref.commands.chaos:chaos", "Inject faults into a cluster; record and check the history."),
    "check": ("kafkaref.commands.check:check", "Check a history for anomalies (Spark or twin)."),
    "history": ("kafkaref.commands.history:history",
                "Import / export histories as JSON lines; merge runs; check a soak as one."),
    "report": ("kafkaref.commands.report:report_command", "Write report.html for a checked run."),
    "synth": ("kafkaref.commands.check:synth", "Write a synthetic history with injected anomalies."),
    "broker": ("kafkaref.commands.broker:broker", "Run one broker until SIGTERM (alone or in a cluster)."),
    "cluster": ("kafkaref.commands.cluster:cluster", "Run a local multi-process cluster."),
    "topics": ("kafkaref.commands.client:topics", "Create, list, describe, delete, grow topics; configs."),
    "produce": ("kafkaref.commands.client:produce", "Send stdin lines as records."),
    "consume": ("kafkaref.commands.client:consume", "Print records from a topic."),
    "conform": ("kafkaref.commands.conform:conform", "Run the conformance checks against a broker."),
    "peer": ("kafkaref.commands.peer:peer",
             "Start Apache Kafka, kafkaref, Tansu or kfake by name; kill, restart, pause, tear it."),
    "peer-suite": ("kafkaref.commands.peer_suite:peer_suite",
                   "Run librdkafka's or franz-go's own test suite against a broker."),
    "mutants": ("kafkaref.commands.mutants:mutants_command",
                "Run every deliberate fault against the checks: a detection matrix."),
    "scenarios": ("kafkaref.commands.mutants:scenarios_command",
                  "Replay the bug transcripts in properties/scenarios/ (--rewrite)."),
}


def _load(target: str) -> click.Command:
    module_name, attribute = target.split(":")
    return getattr(importlib.import_module(module_name), attribute)


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        entry = COMMANDS.get(name)
        return _load(entry[0]) if entry else None

    def format_commands(self, ctx, formatter):
        with formatter.section("Commands"):
            formatter.write_dl([(name, COMMANDS[name][1]) for name in sorted(COMMANDS)])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="kafkaref")
def main():
    """kafkaref: a formally specified, property-tested reference Kafka data plane.

    \b
    Common entry points:
      kafkaref demo                      the main job (see README.md)
      kafkaref explore --variant kip320  exhaustively check the replication spec
      kafkaref bench NAME [--json]       benchmarks with ratios against a baseline
    """

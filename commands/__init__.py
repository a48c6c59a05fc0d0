"""kafkaref.commands: the `kafkaref` command and every subcommand, the one place that parses
flags and prints (click, rich). Each command is a thin layer over a library call in spec/,
model/, impl/, history/, chaos/, spark_checks/ or properties/; no library imports this package
(docs/architecture.md, "Layers").
"""

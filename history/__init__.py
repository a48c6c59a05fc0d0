"""kafkaref.history: what clients observed during a run, as files; the one home of its format
(format.py: columns, validation, the anomaly catalogue), its storage (store.py: Parquet and
JSON lines) and the merging of runs into one history (merge.py). chaos/ writes histories and
spark_checks/ judges them; both import this package, never each other (docs/histories.md).
"""

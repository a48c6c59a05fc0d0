"""Maps the top-level folders onto the kafkaref.* namespace.

pyproject.toml holds the metadata; this file only computes the package list, because setuptools'
static configuration cannot prefix auto-discovered subpackages with a namespace.
"""

from setuptools import find_packages, setup

LAYERS = ["spec", "model", "impl", "history", "chaos", "spark_checks", "properties", "commands"]

package_dir = {f"kafkaref.{layer}": layer for layer in LAYERS}
packages = [
    name
    for layer in LAYERS
    for name in [f"kafkaref.{layer}"] + [f"kafkaref.{layer}.{sub}" for sub in find_packages(layer)]
]
# Data folders (no __init__.py) an installed kafkaref reads: listed as packages of their own, so
# setuptools ships them without warning that an importable folder is missing from `packages`
# (their files are named in pyproject.toml's package-data).
packages += ["kafkaref.chaos.peers.kfake_main", "kafkaref.properties.differential.transcripts",
             "kafkaref.properties.scenarios"]

setup(package_dir=package_dir, packages=packages)

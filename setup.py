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

setup(package_dir=package_dir, packages=packages)

"""python -m kafkaref.properties.differential: see cli.py."""

from kafkaref.properties.differential.cli import main

if __name__ == "__main__":  # every module is imported up front by the tests (profiles.py)
    main()

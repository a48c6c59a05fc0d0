"""Entry point for spark-submit: `spark-submit --master URL spark_checks/submit.py HISTORY REPORT`.

The master, resources and deploy mode come from spark-submit (standalone, YARN, Kubernetes); the
check is the same job `kafkaref check` runs locally. Exit code as `kafkaref check`.
"""

import sys


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print("usage: submit.py HISTORY REPORT.json [CONFIG.json]", file=sys.stderr)
        return 2
    import json

    from kafkaref.history.format import CheckConfig
    from kafkaref.spark_checks import job
    from kafkaref.spark_checks.session import get_session

    config = CheckConfig.from_dict(json.load(open(argv[2]))) if len(argv) == 3 else None
    spark = get_session(master=None, app_name="kafkaref-check")
    try:
        result = job.check(spark, argv[0], config)
    finally:
        spark.stop()
    with open(argv[1], "w") as handle:
        handle.write(result.dumps() + "\n")
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

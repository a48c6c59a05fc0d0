"""One place that builds SparkSessions: quiet, local-first, bound to 127.0.0.1 in local mode.

Spark prints pages of INFO/WARN at startup before any setLogLevel call can run, so the driver
JVM is started with a log4j2 configuration of our own (in a temp SPARK_CONF_DIR: the package ships
only Python) that keeps ERROR and above, in a log file of this process (spark_error.log_path(),
created only when something is logged) rather than on the terminal: a failed task's Java stack
traces run to hundreds of lines, and the verdict names the root cause in one
(spark_error.one_line). KAFKAREF_SPARK_VERBOSE=1 restores Spark's defaults.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import tempfile
from pathlib import Path

from kafkaref.spark_checks.spark_error import LOG_ENV, log_path

LOCAL_MASTER = "local[2]"

_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${env:KAFKAREF_SPARK_LOG:-/tmp/kafkaref-spark.log}
appender.file.createOnDemand = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
# In shell mode (how PySpark starts its JVM) Spark compares the level configured for the class
# that starts logging (WARN when none is) with the root's and prints a "Setting default log
# level" banner when they differ: configuring org.apache.spark at the root's level avoids it.
logger.spark.name = org.apache.spark
logger.spark.level = error
logger.sparkproject.name = org.sparkproject
logger.sparkproject.level = error
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
"""


def conf_dir() -> Path:
    """A SPARK_CONF_DIR holding only our log4j2.properties (Spark's scripts put it first on the
    classpath of every JVM they start: driver, master, worker, executors). Named after its
    content, so checkouts of different versions on one machine never rewrite each other's."""
    digest = hashlib.sha256(_LOG4J2.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"kafkaref-spark-conf-{digest}"
    path.mkdir(exist_ok=True)
    file = path / "log4j2.properties"
    if not file.exists() or file.read_text() != _LOG4J2:
        partial = path / f".log4j2.{os.getpid()}"
        partial.write_text(_LOG4J2)
        partial.replace(file)  # atomic: a JVM starting meanwhile reads all of it or none
    return path


def quiet_environment() -> dict[str, str]:
    """Environment for Spark processes we start ourselves (spark-class, spark-submit)."""
    if os.environ.get("KAFKAREF_SPARK_VERBOSE"):
        return {}
    return {"SPARK_CONF_DIR": str(conf_dir()), LOG_ENV: str(log_path())}


def base_conf(master: str = LOCAL_MASTER, shuffle_partitions: int = 8) -> dict[str, str]:
    """Settings every kafkaref Spark job uses; cluster managers may override resources."""
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        # Off: an adaptive plan announces no partitioning until it has run, so every join and
        # window over the records persisted once by (topic, partition) (checks.Frames) would
        # shuffle them again. The checks choose their broadcasts themselves from exact counts.
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        # Joins on (topic, partition, value) of two sides both partitioned by (topic, partition)
        # reuse that partitioning instead of shuffling both again (checks.Frames).
        "spark.sql.requireAllClusterKeysForCoPartition": "false",
        # ... and a persisted DataFrame keeps announcing its partitioning (by default AQE may
        # re-plan a cached plan, so Spark treats its partitioning as unknown and shuffles again).
        "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "false",
        # Every Parquet page's CRC checked as it is read (history/store.py writes them).
        "spark.hadoop.parquet.page.verify-checksum.enabled": "true",
    }
    if master.startswith("local"):
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
    return conf


def get_session(master: str | None = LOCAL_MASTER, app_name: str = "kafkaref-check",
                conf: dict[str, str] | None = None, shuffle_partitions: int = 8):
    """A SparkSession (the existing one if a session is already active, as under spark-submit,
    where master is None: spark-submit decides)."""
    if master and master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    for key, value in quiet_environment().items():
        os.environ.setdefault(key, value)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    for key, value in {**base_conf(master or "", shuffle_partitions), **(conf or {})}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(os.environ.get("KAFKAREF_SPARK_LOG_LEVEL", "ERROR"))
    return session


def run_session(master: str = LOCAL_MASTER):
    """A Spark session for the history of one chaos run: few shuffle partitions (a run's history
    is small; eight partitions only multiply the tasks of every check)."""
    return get_session(master, "kafkaref-chaos", shuffle_partitions=2)


@functools.cache
def shared_test_session():
    """The one SparkSession a pytest run uses (local[2], few shuffle partitions). Never stopped
    by tests: the JVM is paid for once and exits with the interpreter."""
    return get_session(LOCAL_MASTER, "kafkaref-tests", shuffle_partitions=2,
                       conf={"spark.sql.adaptive.enabled": "false",
                             "spark.default.parallelism": "2",
                             "spark.driver.memory": "1g"})

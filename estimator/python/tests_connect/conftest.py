"""A real Spark Connect server with SparkPS on its class path, started for the session, and a client session on it.

The client is this Python, which should hold only ``pyspark-client`` (no JVM, no Py4J). The server is the
Spark distribution inside the classic PySpark of ``SPARKPS_CLASSIC_PYTHON`` (the build's own Python),
started with ``SPARKPS_JAR``.
"""

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from data import blobs  # noqa: E402

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def _spark_home():
    given = os.environ.get("SPARKPS_SPARK_HOME")
    if given:
        return given
    classic = os.environ.get("SPARKPS_CLASSIC_PYTHON", "python3")
    return subprocess.check_output(
        [classic, "-c", "import os, pyspark; print(os.path.dirname(pyspark.__file__))"], text=True).strip()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ConnectServer:
    """``spark-submit`` of Spark's Connect server on a free port, its log in ``log``; stopped with its process group."""

    def __init__(self, tmp, name, jar=None, conf=None):
        self.port = _free_port()
        self.log = os.path.join(str(tmp), name + ".log")
        home = _spark_home()
        command = [os.path.join(home, "bin", "spark-submit"), "--class", SERVER_CLASS, "--master", "local[4]",
                   "--conf", "spark.connect.grpc.binding.port=%d" % self.port, "--conf", "spark.ui.enabled=false"]
        if jar:
            # The server lists ML operators through ServiceLoader in its own class loader: the jar must be on the
            # driver's class path, not only added with --jars.
            command += ["--jars", jar, "--driver-class-path", jar]
        for key, value in (conf or {}).items():
            command += ["--conf", "%s=%s" % (key, value)]
        env = dict(os.environ, SPARK_HOME=home, OMP_NUM_THREADS="1")
        with open(self.log, "w") as out:
            self.process = subprocess.Popen(command + ["spark-internal"], stdout=out, stderr=subprocess.STDOUT,
                                            env=env, start_new_session=True)
        self._await(120)

    def _await(self, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("the Spark Connect server exited (%d) before serving: see %s"
                                   % (self.process.returncode, self.log))
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.5)
        self.stop()
        raise TimeoutError("the Spark Connect server did not listen on port %d within %d s: see %s"
                           % (self.port, seconds, self.log))

    @property
    def url(self):
        return "sc://127.0.0.1:%d" % self.port

    def stop(self):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    jar = os.environ.get("SPARKPS_JAR")
    if not jar:
        pytest.exit("SPARKPS_JAR names no jar: the Connect tests start a server with it (the Maven build sets it)",
                    returncode=2)
    s = ConnectServer(tmp_path_factory.mktemp("connect"), "sparkps-server", jar)
    yield s
    s.stop()


@pytest.fixture(scope="session")
def spark(server):
    from pyspark.sql import SparkSession

    session = SparkSession.builder.remote(server.url).getOrCreate()
    yield session
    session.stop()


@pytest.fixture(scope="session")
def train(spark):
    return blobs(spark)


@pytest.fixture(scope="session")
def test_rows(spark):
    return blobs(spark, n=900, seed=2)


def accuracy(model, rows):
    out = model.transform(rows)
    return out.where("prediction = label").count() / out.count()

"""MLflow from Python: a real ``mlflow server`` (SQLite store, artifacts kept by the server) started for the session,
and the local Spark with the SparkPS jar of the package's own tests.

Run by the build with -Dpython.mlflow=<a Python with the requirements' mlflow pins>, which hold MLflow and PySpark 3.5.
"""

import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

_tests = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests")
sys.path.insert(0, _tests)

# The Spark session, the data sets and the estimator of the package's own tests (their conftest, under another name).
_spec = importlib.util.spec_from_file_location("sparkps_tests_conftest", os.path.join(_tests, "conftest.py"))
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)
spark, train, test_rows, estimator = _shared.spark, _shared.train, _shared.test_rows, _shared.estimator

#: How long the tracking server may take to answer its health check.
SERVER_START_SECONDS = 180


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory):
    """The URI of a tracking server of this session's own; it and its workers are stopped at the end."""
    root = tmp_path_factory.mktemp("mlflow-server")
    port = _free_port()
    log = open(root / "server.log", "wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", "sqlite:///%s" % (root / "mlflow.db"),
         "--artifacts-destination", str(root / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
         "--workers", "1"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    uri = "http://127.0.0.1:%d" % port
    try:
        deadline = time.monotonic() + SERVER_START_SECONDS
        while True:
            try:
                with urllib.request.urlopen(uri + "/health", timeout=5) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the mlflow server at %s did not answer /health within %d s (exit %s); the end of "
                                   "its log:\n%s" % (uri, SERVER_START_SECONDS, process.poll(),
                                                    (root / "server.log").read_text()[-3000:]))
            time.sleep(1)
        yield uri
    finally:
        try:
            os.killpg(process.pid, signal.SIGTERM)  # the server, its uvicorn worker and its job consumers
            process.wait(20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(process.pid, signal.SIGKILL)
        log.close()


def pytest_configure(config):
    """This Python must hold MLflow and the PySpark of this build's Spark (the mlflow pins give both)."""
    _shared.require_suite_python("tests_mlflow", "mlflow", "MLflow", "mlflow")

"""The Keras import from Python: tf_keras models handed to the estimator of a real local PySpark.

Run by the build with -Dpython.keras=<a Python with the requirements' keras pins> (TensorFlow is large,
so only this suite needs it).
"""

import importlib.util
import os
import sys

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
_tests = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests")
sys.path.insert(0, _tests)

# The Spark session, the data sets and the scoring of the package's own tests (their conftest, under another name).
_spec = importlib.util.spec_from_file_location("sparkps_tests_conftest", os.path.join(_tests, "conftest.py"))
_shared = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_shared)
spark, train, test_rows, accuracy = _shared.spark, _shared.train, _shared.test_rows, _shared.accuracy


@pytest.fixture(scope="session")
def keras():
    import tf_keras

    tf_keras.utils.set_random_seed(1)
    return tf_keras


def dl4j_params(spark, network_json):
    """The parameter count of the DL4J network SparkPS builds from a (DL4J) configuration's JSON."""
    jvm = spark.sparkContext._jvm
    if '"vertices"' in network_json:
        conf = jvm.org.deeplearning4j.nn.conf.ComputationGraphConfiguration.fromJson(network_json)
        net = jvm.org.deeplearning4j.nn.graph.ComputationGraph(conf)
    else:
        conf = jvm.org.deeplearning4j.nn.conf.MultiLayerConfiguration.fromJson(network_json)
        net = jvm.org.deeplearning4j.nn.multilayer.MultiLayerNetwork(conf)
    net.init()
    return net.numParams()


def pytest_configure(config):
    """This Python must hold tf_keras and the PySpark of this build's Spark (the keras pins give both)."""
    _shared.require_suite_python("tests_keras", "tf_keras", "tf_keras and TensorFlow", "keras")

"""One local Spark with the SparkPS jar for the whole session, and small data sets to train on."""

import os

import pytest

import sparkps
from data import blobs


@pytest.fixture(scope="session")
def spark():
    # 4 slots: a ps and two workers at once, and one to spare for the evaluator.
    session = sparkps.local_session("local[4]", "sparkps-pytest", {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "4",
    })
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def train(spark):
    return blobs(spark).cache()


@pytest.fixture(scope="session")
def test_rows(spark):
    return blobs(spark, n=900, seed=2).cache()


def accuracy(model, rows):
    out = model.transform(rows)
    return out.where("prediction = label").count() / out.count()


def estimator(**params):
    """An MLP for ``blobs``: 12 features, 3 classes, 2 workers and 1 ps, 2 epochs of minibatches of 32."""
    from sparkps.ml import Dl4jEstimator
    from sparkps.ml.networks import preset

    settings = dict(networkJson=preset("mlp:32", 12, 3, seed=7), numWorkers=2, numPs=1, epochs=2, batchSize=32,
                    seed=3)
    settings.update(params)
    return Dl4jEstimator(**settings)


@pytest.fixture(scope="session")
def model(train):
    """A model trained once for the tests that only read one."""
    return estimator().fit(train)


def pytest_configure(config):
    """The PySpark in use must be the Spark this build targets (the Maven build says which)."""
    import pyspark

    wanted = os.environ.get("SPARKPS_SPARK_VERSION")
    if wanted and pyspark.__version__ != wanted:
        pytest.exit("this build's Spark is %s but PySpark %s is installed: pip install pyspark==%s (the pins are in "
                    "estimator/python/requirements.txt)" % (wanted, pyspark.__version__, wanted), returncode=2)


def require_suite_python(suite, module, what, env):
    """Stops a suite of its own Python (``tests_keras``, ``tests_mlflow``) unless ``module`` imports and the
    PySpark installed is this build's Spark: the requirements' ``env`` lines give both."""
    import importlib

    import pyspark

    try:
        importlib.import_module(module)
    except ImportError:
        pytest.exit("%s needs %s: pip install the lines of estimator/python/requirements.txt marked %s"
                    % (suite, what, env), returncode=2)
    wanted = os.environ.get("SPARKPS_SPARK_VERSION")
    if wanted and pyspark.__version__ != wanted:
        pytest.exit("this build's Spark is %s but PySpark %s is installed here: the %s pins are for the Spark 3.5 "
                    "build" % (wanted, pyspark.__version__, env), returncode=2)

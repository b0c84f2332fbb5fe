"""The same sparkps.ml stages on a Spark Connect session, from a client with no JVM: fit, transform, save and
load, a Pipeline, fitAsync, and failures that arrive named."""

import concurrent.futures
import importlib.util
import time

import pytest
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.feature import StandardScaler
from pyspark.sql.utils import is_remote

from conftest import ConnectServer, accuracy
from sparkps.ml import Dl4jEstimator, Dl4jModel, TrainingFailure


def estimator(**params):
    settings = dict(network="mlp:32", numWorkers=2, numPs=1, epochs=2, batchSize=32, seed=3)
    settings.update(params)
    return Dl4jEstimator(**settings)


def test_the_client_holds_no_jvm(spark):
    assert is_remote()
    assert importlib.util.find_spec("py4j") is None, "pyspark-client only: no Py4J, no JVM on the client"


def test_fit_and_transform_run_on_the_server(spark, train, test_rows):
    model = estimator().fit(train)
    assert isinstance(model, Dl4jModel)
    assert accuracy(model, test_rows) > 0.85
    # Of a third-party model a Connect server serves toString only: describe() reads it.
    brief = model.describe()
    assert model.isClassifier() and not model.hasEmbeddings()
    assert brief["outputs"] == 3 and brief["parameters"] == 12 * 32 + 32 + 32 * 3 + 3 and brief["steps"] == 92
    assert 0 < brief["loss"] < 1, brief
    with pytest.raises(NotImplementedError, match="summary.json"):
        model.summary()


def test_a_model_saved_over_connect_loads_and_predicts_the_same(spark, train, test_rows, tmp_path):
    model = estimator(epochs=1).fit(train)
    path = str(tmp_path / "model")
    model.write().overwrite().save(path)
    # The whole training record over Connect, as summary()'s message says: read on the server.
    record = spark.read.json(path + "/data/summary.json").first()
    assert record.stageAttempts == 1 and max(w.step for w in record.workers) == 46
    loaded = Dl4jModel.load(path)
    assert isinstance(loaded, Dl4jModel)
    ordered = test_rows.orderBy("features")
    before = [r.prediction for r in model.transform(ordered).select("prediction").collect()]
    after = [r.prediction for r in loaded.transform(ordered).select("prediction").collect()]
    assert before == after and len(before) == 900


def test_an_estimator_saved_over_connect_loads_with_its_params(spark, tmp_path):
    est = estimator(epochs=3, consistency="ASYNC")
    path = str(tmp_path / "est")
    est.write().overwrite().save(path)
    loaded = Dl4jEstimator.load(path)
    assert isinstance(loaded, Dl4jEstimator)
    assert loaded.getEpochs() == 3 and loaded.getConsistency() == "ASYNC" and loaded.getNetwork() == "mlp:32"


def test_a_pipeline_fits_saves_and_loads_over_connect(spark, train, test_rows, tmp_path):
    raw = train.withColumnRenamed("features", "raw")
    fitted = Pipeline(stages=[StandardScaler(inputCol="raw", outputCol="features"), estimator(epochs=1)]).fit(raw)
    assert isinstance(fitted.stages[1], Dl4jModel)
    path = str(tmp_path / "pipeline-model")
    fitted.write().overwrite().save(path)
    loaded = PipelineModel.load(path)
    assert isinstance(loaded.stages[1], Dl4jModel)
    held_out = test_rows.withColumnRenamed("features", "raw")
    out = loaded.transform(held_out)
    assert out.where("prediction = label").count() / out.count() > 0.8


def test_fitAsync_is_a_future_and_cancel_interrupts_the_fit(spark, train):
    job = estimator(epochs=1).fitAsync(train)
    assert isinstance(job, concurrent.futures.Future)
    model = job.result(timeout=300)
    assert isinstance(model, Dl4jModel) and job.status() == "SUCCEEDED"

    long_fit = estimator(epochs=500).fitAsync(train)
    time.sleep(8)  # the ML command is running on the server
    assert long_fit.cancel() and long_fit.status() == "CANCELLED"
    with pytest.raises(concurrent.futures.CancelledError):
        long_fit.result(timeout=1)
    # The server cancelled the run: a new fit gets the cluster's slots at once.
    started = time.monotonic()
    estimator(epochs=1).fit(train)
    assert time.monotonic() - started < 120


def test_bad_input_arrives_named(spark, train):
    with pytest.raises(ValueError, match=r"numWorkers=0 is not valid: workers, the chief included \(>= 1\)"):
        Dl4jEstimator(network="mlp:32", numWorkers=0).fit(train)
    with pytest.raises(ValueError, match=r"the label column 'target' is not in the DataFrame"):
        estimator(labelCol="target").fit(train)


def test_a_failed_run_arrives_as_TrainingFailure_with_sparkps_message(spark, tmp_path):
    from data import parquet_with_a_nan

    rows = parquet_with_a_nan(spark, str(tmp_path / "rows.parquet"))
    with pytest.raises(TrainingFailure) as failure:
        estimator(network="mlp:4", batchSize=16).fit(rows)
    message = str(failure.value)
    assert "row 57 of input partition 0" in message and "NaN" in message, message
    e = failure.value
    assert e.role in ("CHIEF", "WORKER") and e.index in (0, 1) and e.host and e.attempt == 0, vars(e)


def test_a_model_over_the_servers_cache_limit_names_the_setting_to_raise(spark, train):
    key = "spark.connect.session.connectML.mlCache.memoryControl.maxModelSize"
    spark.conf.set(key, "1000")
    try:
        with pytest.raises(RuntimeError, match=r"the trained model is about \d+ bytes, more than the Spark Connect "
                                               r"server keeps for one model \(1000 bytes\): raise " + key):
            estimator(epochs=1).fit(train)
    finally:
        spark.conf.unset(key)


def test_a_server_without_sparkps_says_to_add_the_jar(tmp_path):
    from pyspark.sql import SparkSession

    bare = ConnectServer(tmp_path, "bare-server")
    try:
        session = SparkSession.builder.remote(bare.url).create()
        try:
            rows = session.createDataFrame([(1.0, 0.0)], ["x", "label"])
            with pytest.raises(RuntimeError, match=r"this Spark Connect server has no SparkPS \(no ML operator "
                                                   r"io.sparkps.ml.Dl4jEstimator\): .*sparkps-estimator_2.13-<version>"
                                                   r"-all.jar, on the driver's class path and the executors': "
                                                   r"--driver-class-path <jar> --jars <jar>"):
                estimator().fit(rows)
        finally:
            session.stop()
    finally:
        bare.stop()


def _keras_fixture(name):
    """A tf_keras model's JSON as sparkps.ml.keras.model_json writes it (the client here holds no TensorFlow)."""
    import os

    path = os.path.join(os.path.dirname(__file__), "..", "..", "src", "test", "resources", "keras", name + ".json")
    with open(path) as f:
        return f.read()


def test_a_keras_model_travels_as_its_json_and_the_server_imports_it(spark, train, test_rows):
    model = Dl4jEstimator(networkJson=_keras_fixture("blobs_mlp"), numWorkers=2, numPs=1, epochs=2, batchSize=32,
                          seed=3).fit(train)
    assert accuracy(model, test_rows) > 0.85
    with pytest.raises(ValueError, match=r"layer 'ln' \(LayerNormalization\) does not import.*use BatchNormalization"):
        Dl4jEstimator(networkJson=_keras_fixture("layer_norm")).fit(train)

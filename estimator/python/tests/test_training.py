"""Training from Python: fit, fitAsync's future (status, progress, result, cancel), and failures raised as
SparkPS names them."""

import concurrent.futures
import io
import time

import pytest

from conftest import accuracy, blobs, estimator
from sparkps.ml import Dl4jModel, FitJob, JavaStackTrace, TrainingFailure
from sparkps.ml import _jobs


def test_fit_trains_a_model_that_predicts_the_held_out_rows(model, test_rows):
    assert isinstance(model, Dl4jModel)
    assert model.isClassifier() and not model.hasEmbeddings()
    assert accuracy(model, test_rows) > 0.85
    summary = model.summary()
    assert summary["stageAttempts"] == 1
    last = {}
    for record in summary["workers"]:
        last[record["index"]] = max(last.get(record["index"], 0), record["step"])
    # 3,000 rows, 1,500 a worker, in whole minibatches of 32: 46 steps an epoch, 2 epochs.
    assert last == {0: 92, 1: 92}
    brief = model.describe()
    assert {k: brief[k] for k in ("classifier", "embeddings", "steps")} == {"classifier": True, "embeddings": False,
                                                                           "steps": 92}
    assert brief["outputs"] == 3 and brief["parameters"] == model._call_java("network").numParams()
    assert brief["elapsedSeconds"] == summary["elapsedMillis"] / 1000.0


def test_the_model_carries_the_estimators_output_columns(train, test_rows):
    model = estimator(epochs=1, predictionCol="cls", probabilityCol="p").fit(train)
    assert model.getPredictionCol() == "cls" and model.getProbabilityCol() == "p"
    out = model.transform(test_rows)
    assert {"cls", "p", "rawPrediction"} <= set(out.columns)
    assert out.where("cls = label").count() / out.count() > 0.8


def test_fitAsync_returns_at_once_a_future_with_status_progress_and_the_model(train, test_rows):
    job = estimator(epochs=3).fitAsync(train, progress=False)
    assert isinstance(job, FitJob) and isinstance(job, concurrent.futures.Future)
    assert job.status() in ("PENDING", "LAUNCHING", "RUNNING")
    assert job.totalSteps() == 138
    model = job.result(timeout=180)
    assert job.status() == "SUCCEEDED" and job.done() and job.exception() is None
    # Each task's last report stays readable once the run has ended (progress while a run trains: the
    # cancel test below, whose run is long enough to span many of the tasks' once-a-second reports).
    chief = [t for t in job.progress() if t["role"] == "CHIEF"]
    assert len(chief) == 1, job.progress()
    chief = chief[0]
    assert chief["index"] == 0 and chief["host"] and "loss" in chief["metrics"]
    assert chief["step"] == 138 and chief["examples"] == 138 * 32, chief
    assert job.line().startswith("[sparkps] step 138/138 (100%) epoch 3 loss ")
    assert job.line().endswith(" - succeeded")
    assert accuracy(model, test_rows) > 0.85


def test_result_waits_at_most_its_timeout(train):
    job = estimator(epochs=20).fitAsync(train, progress=False)
    try:
        started = time.monotonic()
        with pytest.raises(concurrent.futures.TimeoutError):
            job.result(timeout=0.5)
        assert time.monotonic() - started < 5
    finally:
        job.cancel()


def test_cancel_stops_the_run_and_result_raises_CancelledError(train):
    job = estimator(epochs=50).fitAsync(train, progress=False)
    seen = []
    deadline = time.monotonic() + 120
    while not seen and not job.done() and time.monotonic() < deadline:
        seen = [t for t in job.progress() if t["role"] == "CHIEF" and t["step"] > 0]
        time.sleep(0.2)
    # 2,300 steps a worker: the chief reports its progress many times while it trains.
    assert seen and not job.done(), "the chief's progress was seen while it trained: " + job.line()
    assert 0 < seen[0]["step"] < job.totalSteps() == 2300 and "loss" in seen[0]["metrics"], seen
    assert job.status() == "RUNNING" and job.line().startswith("[sparkps] step "), job.line()
    assert job.cancel()
    assert job.cancelled()
    with pytest.raises(concurrent.futures.CancelledError):
        job.result(timeout=1)
    deadline = time.monotonic() + 60
    while job.status() != "CANCELLED" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert job.status() == "CANCELLED"
    assert not job.cancel(), "an ended run is not cancelled again"


def test_a_bad_row_fails_the_fit_with_sparkps_message_naming_the_row_and_file(spark, tmp_path):
    from data import parquet_with_a_nan
    from sparkps.ml.networks import preset

    rows = parquet_with_a_nan(spark, str(tmp_path / "rows.parquet"))
    with pytest.raises(TrainingFailure) as failure:
        estimator(networkJson=preset("mlp:4", 2, 2), batchSize=16).fit(rows)
    e = failure.value
    message = str(e)
    assert "row 57 of input partition 0 (read from file:" in message and "rows.parquet" in message, message
    assert "column 'features'" in message and "NaN" in message, message
    assert e.role in ("CHIEF", "WORKER") and e.index in (0, 1) and e.host, vars(e)
    assert isinstance(e.__cause__, JavaStackTrace) and "\tat io.sparkps." in str(e.__cause__)
    assert "Py4J" not in message and "py4j" not in message
    with pytest.raises(Exception) as again:  # the worker's function rerun in the driver meets the same row
        e.recreateLocally()
    assert "row 57 of input partition 0" in str(again.value) and "NaN" in str(again.value), repr(again.value)
    assert isinstance(again.value.__cause__, JavaStackTrace)


def test_bad_input_is_refused_before_any_spark_job_naming_the_param_or_column(spark, train):
    from sparkps.ml import Dl4jEstimator, EmbeddingColumn
    from sparkps.ml.networks import preset

    def jobs():
        return spark._jsc.sc().statusStore().jobsList(None).size()

    jobs_before = jobs()
    with pytest.raises(ValueError, match=r"numWorkers=0 is not valid: workers, the chief included \(>= 1\)"):
        Dl4jEstimator(numWorkers=0)
    with pytest.raises(ValueError, match=r"consistency='async' is not valid: ASYNC, SYNC or SSP"):
        Dl4jEstimator().setConsistency("async")
    with pytest.raises(TypeError, match=r'numWorkers'):
        Dl4jEstimator(numWorkers="two")
    with pytest.raises(TypeError, match=r"no Param numWorker \(did you mean numWorkers\?\)"):
        Dl4jEstimator(numWorker=2)
    with pytest.raises(ValueError, match=r"embeddingColumns=.*pooling must be SUM or MEAN"):
        Dl4jEstimator(embeddingColumns=[EmbeddingColumn("C1", 8, pooling="MAX")])
    with pytest.raises(TypeError, match=r"EmbeddingColumn 'C1': unknown option\(s\) dims"):
        EmbeddingColumn("C1", 8, dims=3)
    with pytest.raises(ValueError, match=r"mlp:0: the hidden layer sizes must be positive whole numbers"):
        preset("mlp:0", 12, 3)
    with pytest.raises(ValueError, match=r"the label column 'target' is not in the DataFrame"):
        estimator(labelCol="target").fit(train)
    assert jobs() == jobs_before


def test_embedding_columns_go_to_the_jvm_as_the_json_it_reads(spark):
    from sparkps.ml import Dl4jEstimator, EmbeddingColumn

    est = Dl4jEstimator(embeddingColumns=[EmbeddingColumn("C1", 8), EmbeddingColumn("C2", 4, buckets=1000,
                                                                                       pooling="MEAN")])
    columns = spark._jvm.io.sparkps.ml.param.EmbeddingColumn.fromJson(est.getEmbeddingColumns())
    assert columns.size() == 2
    assert columns.get(1).column() == "C2" and columns.get(1).buckets() == 1000
    assert columns.get(1).pooling().name() == "MEAN"
    assert columns.get(0).optimizer().name() == "ROWWISE_ADAGRAD", "what Python leaves out takes the JVM's default"


def test_progress_shows_as_the_command_line_prints_it():
    out = io.StringIO()
    display = _jobs.Display(out)
    snapshot = {"step": 10, "totalSteps": 100, "done": False,
                "line": "[sparkps] step 10/100 (10%) epoch 1 loss 0.5000"}
    display.show(snapshot)
    display.show(dict(snapshot, step=20))  # within LINE_SECONDS of the last: not printed
    ended = dict(snapshot, done=True, line="[sparkps] step 100/100 (100%) - succeeded")
    display.show(ended)  # the last poll: close() prints it, once
    display.close(ended)
    assert out.getvalue().splitlines() == ["[sparkps] step 10/100 (10%) epoch 1 loss 0.5000",
                                           "[sparkps] step 100/100 (100%) - succeeded"]

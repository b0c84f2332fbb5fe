"""The estimator inside MLflow runs as PySpark's own estimators are: under ``mlflow.pyspark.ml.autolog()`` (or any
active run) a fit logs into that run, whatever the store, and the model it logs loads back with
``mlflow.spark.load_model`` and through the model registry, predicting what the fit's model predicts."""

import mlflow
import pytest
from mlflow import MlflowClient

from conftest import estimator


def chief_losses(model):
    """[(step, loss)] of every step the chief recorded, as the model's summary holds them."""
    return [(r["step"], r["metrics"]["loss"]) for r in model.summary()["workers"]
            if r["role"] == "CHIEF" and "loss" in r["metrics"]]


def predictions(model, rows):
    return [r.prediction for r in model.transform(rows).orderBy("id").select("prediction").collect()]


def assert_logged(client, run_id, model):
    """The run holds every chief step's loss, at its step, with its value."""
    logged = sorted((m.step, m.value) for m in client.get_metric_history(run_id, "loss"))
    expected = chief_losses(model)
    assert len(expected) > 10
    assert [s for s, _ in logged] == [s for s, _ in expected]
    assert [v for _, v in logged] == pytest.approx([v for _, v in expected], rel=1e-9)


@pytest.fixture
def rows(test_rows):
    from pyspark.sql import functions as F

    return test_rows.withColumn("id", F.monotonically_increasing_id()).limit(200).cache()


def test_under_autolog_a_fit_logs_into_the_autolog_run_and_its_model_loads_back(mlflow_server, train, rows,
                                                                               tmp_path):
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(mlflow_server)
    try:
        experiment = mlflow.set_experiment("sparkps-autolog").experiment_id
        mlflow.pyspark.ml.autolog()
        try:
            model = estimator(epochs=2).fit(train)
        finally:
            mlflow.pyspark.ml.autolog(disable=True)
        client = MlflowClient()
        runs = client.search_runs([experiment])
        assert len(runs) == 1, "the fit logged into autolog's run, it made none of its own"
        run = client.get_run(runs[0].info.run_id)
        assert run.info.status == "FINISHED"
        assert run.data.tags.get("mlflow.autologging") == "pyspark.ml"
        # autolog's params (the estimator's Params) and SparkPS's, which autolog does not know
        assert run.data.params["numWorkers"] == "2"
        assert run.data.params["batchSize"] == "32"
        assert int(run.data.params["networkParameters"]) > 0
        assert run.data.params["dataSchema"].startswith("struct<")
        assert run.data.params["dataRows"] == str(train.count())
        assert len(run.data.params["sparkpsRunId"]) > 0
        assert_logged(client, run.info.run_id, model)
        assert len(client.get_metric_history(run.info.run_id, "stepMs")) == len(chief_losses(model))

        loaded = mlflow.spark.load_model("runs:/%s/model" % run.info.run_id, dfs_tmpdir=str(tmp_path / "dfs"))
        expected = predictions(model, rows)
        assert predictions(loaded, rows) == expected

        version = mlflow.register_model("runs:/%s/model" % run.info.run_id, "sparkps-blobs")
        registered = mlflow.spark.load_model("models:/sparkps-blobs/%s" % version.version,
                                             dfs_tmpdir=str(tmp_path / "dfs-registry"))
        assert predictions(registered, rows) == expected
    finally:
        mlflow.set_tracking_uri(previous)


def test_inside_a_run_of_a_local_store_the_fit_is_logged_from_python(train, rows, tmp_path):
    previous = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri("sqlite:///%s" % (tmp_path / "local.db"))
    try:
        # (a database store keeps artifacts in ./mlruns unless told otherwise)
        mlflow.set_experiment(experiment_id=mlflow.create_experiment(
            "sparkps-local", artifact_location=(tmp_path / "artifacts").as_uri()))
        with mlflow.start_run() as run:
            model = estimator(epochs=1).fit(train)
        client = MlflowClient()
        assert client.get_run(run.info.run_id).info.status == "FINISHED"
        assert_logged(client, run.info.run_id, model)
        loaded = mlflow.spark.load_model("runs:/%s/model" % run.info.run_id, dfs_tmpdir=str(tmp_path / "dfs"))
        assert predictions(loaded, rows) == predictions(model, rows)
        assert (tmp_path / "artifacts").is_dir()
    finally:
        mlflow.set_tracking_uri(previous)

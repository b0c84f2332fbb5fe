"""A fit inside an active MLflow run (``mlflow.start_run()``, or the run ``mlflow.pyspark.ml.autolog()`` opens
around ``fit``): the run gets the fit's metrics (every recorded step's loss and timings, the evaluations), the
training settings it lacks and the trained model, as a fit tracked on its own does.

A tracking server (``http(s)://``) is logged to live by the JVM, into that run; any other store (a local
``mlruns`` directory or ``sqlite:`` file, which the JVM cannot write) is logged to from Python once the model
is trained. MLflow is used only when the program imported it: this module never imports it first.
"""

import json
import sys
import tempfile
from typing import Any, Optional, Tuple

#: MLflow's limit on the metrics of one logging request.
METRICS_PER_BATCH = 1000


def active_run() -> Optional[Tuple[str, str]]:
    """(tracking URI, run id) of MLflow's active run in this thread, when the program uses MLflow; else None."""
    mlflow = sys.modules.get("mlflow")
    if mlflow is None:
        return None
    try:
        run = mlflow.active_run()
        return None if run is None else (mlflow.get_tracking_uri(), run.info.run_id)
    except Exception:  # noqa: BLE001 - a broken MLflow setup never stops a fit
        return None


def is_server(uri: str) -> bool:
    """Whether the JVM can log to ``uri`` itself (a tracking server)."""
    return uri.lower().startswith(("http://", "https://"))


def log_trained(uri: str, run_id: str, model: Any, jvm: Any) -> None:
    """Logs ``model``'s training into run ``run_id`` of the store at ``uri`` from Python: every metric the
    JVM would have logged live (the same names and steps), then the model as ``model`` (MLflow's spark
    flavor) with its ``summary.json``. What fails is warned about; the fit's model is returned all the same."""
    import mlflow
    from mlflow.entities import Metric

    client = mlflow.MlflowClient(uri)
    try:
        records = json.loads(jvm.io.sparkps.ml.python.PythonJob.mlflowMetrics(model._java_obj))
        metrics = [Metric(key, float(value), int(timestamp), int(step)) for key, value, timestamp, step in records]
        for start in range(0, len(metrics), METRICS_PER_BATCH):
            client.log_batch(run_id, metrics=metrics[start:start + METRICS_PER_BATCH])
        client.log_text(run_id, json.dumps(model.summary()), "summary.json")
        import pyspark
        from mlflow.models import Model

        with tempfile.TemporaryDirectory(prefix="sparkps-mlflow-model-") as tmp:
            path = tmp + "/model"
            mlflow.spark.save_model(model, path, mlflow_model=Model(artifact_path="model", run_id=run_id),
                                    pip_requirements=["pyspark==" + pyspark.__version__])
            client.log_artifacts(run_id, path, "model")
    except Exception as e:  # noqa: BLE001 - tracking never fails a fit that trained
        import warnings

        warnings.warn("MLflow: the fit's metrics or model were not all logged into run %s at %s: %s"
                      % (run_id, uri, e), stacklevel=2)

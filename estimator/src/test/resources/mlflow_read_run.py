"""Reads an MLflow run back with MLflow's own Python client, for the tracking tests: prints one JSON
object with the run's status, name, experiment, params, tags and the history of each metric named."""
import json
import sys

from mlflow.tracking import MlflowClient

uri, run_id, *keys = sys.argv[1:]
client = MlflowClient(uri)
run = client.get_run(run_id)
print(json.dumps({
    "status": run.info.status,
    "run_name": run.info.run_name,
    "experiment": client.get_experiment(run.info.experiment_id).name,
    "params": run.data.params,
    "tags": run.data.tags,
    "metrics": {k: [[m.step, m.value] for m in client.get_metric_history(run_id, k)] for k in keys},
}))

"""Reads an MLflow run back with MLflow's own Python client, for the tracking tests: prints one JSON
object with the run's id, status, end time, name, experiment, params, tags, artifacts (the text of each that is
JSON or HTML) and the history of each metric named. The run is given by its id, or as name:NAME."""
import json
import sys

import mlflow
from mlflow.tracking import MlflowClient

uri, run_ref, *keys = sys.argv[1:]
client = MlflowClient(uri)
if run_ref.startswith("name:"):
    experiments = [e.experiment_id for e in client.search_experiments()]
    found = client.search_runs(experiments, filter_string="attributes.run_name = '%s'" % run_ref[5:])
    run_id = found[0].info.run_id
else:
    run_id = run_ref
run = client.get_run(run_id)
artifacts = {}
for f in client.list_artifacts(run_id):
    text = None
    if f.path.endswith((".json", ".html")):
        local = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=f.path, tracking_uri=uri)
        with open(local, encoding="utf-8") as opened:
            text = opened.read()
    artifacts[f.path] = text
print(json.dumps({
    "run_id": run_id,
    "status": run.info.status,
    "end_time": run.info.end_time,
    "run_name": run.info.run_name,
    "experiment": client.get_experiment(run.info.experiment_id).name,
    "params": run.data.params,
    "tags": run.data.tags,
    "artifacts": artifacts,
    "metrics": {k: [[m.step, m.value] for m in client.get_metric_history(run_id, k)] for k in keys},
}))

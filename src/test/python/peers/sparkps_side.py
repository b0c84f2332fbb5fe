"""SparkPS as the peers benchmark runs it: the estimator from Python on a local Spark, 2 workers and 1 ps.

    PYTHONPATH=estimator/python python src/test/python/peers/sparkps_side.py --epochs 5 --consistency ASYNC

The same network, data, optimizer and minibatch as the peers (784-1024-1024-10, Adam 0.001, 64 per worker).
The evaluator scores the 10,000 test images as training goes; the seconds to the target are the first of its
records at or above it, from the run's first step. Prints one JSON line like the peers' scripts.
"""

import argparse
import io
import json
import os
import sys

import sparkps
from sparkps.datasets import fashion_mnist
from sparkps.ml import Dl4jEstimator


def main(args) -> None:
    if args.blas_kernels:  # before the JVM starts: OpenBLAS reads it when it loads
        os.environ["OPENBLAS_CORETYPE"] = args.blas_kernels
    spark = sparkps.local_session("local[4]", "peers-sparkps", {"spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    train = fashion_mnist(spark, "train").cache()
    test = fashion_mnist(spark, "t10k").cache()
    n = train.count()
    test.count()
    network = "lenet" if args.model == "lenet" else "mlp:" + args.hidden
    estimator = Dl4jEstimator(network=network, numWorkers=2, numPs=1, epochs=args.epochs,
                              batchSize=args.batch, consistency=args.consistency, seed=args.seed,
                              evalEverySeconds=max(args.eval_every, 0.1))
    sys.stderr = io.StringIO()  # the progress line
    model = estimator.fitAsync(train, evaluation=test if args.eval_every > 0 else None,
                               progress=False).result(timeout=3600)
    summary = model.summary()
    steps = [w for w in summary["workers"] if w.get("timeMillis")]
    start = min(w["timeMillis"] for w in steps) if steps else None
    history = [(round((e["timeMillis"] - start) / 1000.0, 2), e["metrics"].get("accuracy"))
               for e in summary["evaluator"] if e.get("timeMillis") and "accuracy" in e.get("metrics", {})]
    reached = next((s for s, a in history if a >= args.target), None)
    out = model.transform(test)
    accuracy = out.where("prediction = label").count() / out.count()
    print(json.dumps({"system": "sparkps-" + args.consistency.lower(), "model": args.model, "workers": 2, "ps": 1,
                      "epochs": args.epochs,
                      "blas_kernels": os.environ.get("OPENBLAS_CORETYPE"),
                      "examples_per_s": round(n * args.epochs / (summary["elapsedMillis"] / 1000.0)),
                      "seconds_to_target": reached, "target": args.target, "test_accuracy": accuracy,
                      "history": history}), flush=True)
    spark.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--model", default="mlp", choices=["mlp", "lenet"], help="mlp (of --hidden) or lenet")
    parser.add_argument("--hidden", default="1024,1024")
    parser.add_argument("--consistency", default="ASYNC")
    parser.add_argument("--target", type=float, default=0.88)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--blas-kernels", help="OPENBLAS_CORETYPE for ND4J's OpenBLAS (default: sparkps's choice)")
    parser.add_argument("--eval-every", type=float, default=5.0, help="0: no evaluator (throughput alone)")
    main(parser.parse_args())

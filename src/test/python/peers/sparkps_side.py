"""SparkPS as the peers benchmark runs it: the estimator from Python on a local Spark, 2 workers and 1 ps.

    PYTHONPATH=estimator/python python src/test/python/peers/sparkps_side.py --epochs 5 --consistency ASYNC

The same network, data, optimizer and minibatch as the peers (784-1024-1024-10, Adam 0.001, 64 per worker).
The evaluator scores the 10,000 test images as training goes; the seconds to the target are the first of its
records at or above it, from the run's first step. Prints one JSON line like the peers' scripts.

With ``--model ctr`` it trains the click-through model on ``ClickThroughData``'s rows as a DataFrame (SparkPS's
own data path: the numbers as ``log1p``, each categorical column an embedding column of --dim with AdaGrad at
--table-lr, ids admitted after ``minCount`` sightings), the dense layers of --hidden on Adam, and scores the
held-out rows' AUC; its evaluator scores them every --eval-every seconds.
"""

import argparse
import io
import json
import os
import sys

import sparkps
from sparkps.datasets import fashion_mnist
from sparkps.ml import Dl4jEstimator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ctr_data  # noqa: E402  (the rows the peers read, and the generator's settings)


def click_data(spark, args):
    """The training and held-out rows of the click-through model, cached, and an estimator for them."""
    data, train = ctr_data.sparkps_rows(spark, 0, args.rows)
    _, test = ctr_data.sparkps_rows(spark, ctr_data.HELD_OUT_FIRST, ctr_data.HELD_OUT_ROWS)
    estimator = ctr_data.sparkps_estimator(data, args.dim, args.table_lr, args.min_count, args.hidden, args.lr,
                                           args.seed, numWorkers=2, numPs=args.ps, epochs=args.epochs,
                                           batchSize=args.batch, consistency=args.consistency,
                                           evalEverySeconds=max(args.eval_every, 0.1))
    return train.cache(), test.cache(), estimator


def held_out_auc(model, test) -> float:
    from pyspark.ml.evaluation import BinaryClassificationEvaluator

    return BinaryClassificationEvaluator(rawPredictionCol="probability", numBins=0).evaluate(model.transform(test))


def main(args) -> None:
    if args.blas_kernels:  # before the JVM starts: OpenBLAS reads it when it loads
        os.environ["OPENBLAS_CORETYPE"] = args.blas_kernels
    # A task slot each for the ps, the 2 workers and the evaluator.
    conf = {"spark.ui.enabled": "false", "spark.driver.memory": "8g"}
    properties = list(args.jvm_property)
    if args.convolutions:  # a system property of the local JVM, read as the networks are built
        properties.append("sparkps.convolutions=" + args.convolutions)
    if properties:
        conf["spark.driver.extraJavaOptions"] = " ".join("-D" + p for p in properties)
    spark = sparkps.local_session("local[%d]" % (args.ps + 3), "peers-sparkps", conf)
    spark.sparkContext.setLogLevel("ERROR")
    if args.model == "ctr":
        train, test, estimator = click_data(spark, args)
    else:
        train = fashion_mnist(spark, "train").cache()
        test = fashion_mnist(spark, "t10k").cache()
        network = "lenet" if args.model == "lenet" else "mlp:" + args.hidden
        estimator = Dl4jEstimator(network=network, numWorkers=2, numPs=args.ps, epochs=args.epochs,
                                  batchSize=args.batch, consistency=args.consistency, seed=args.seed,
                                  evalEverySeconds=max(args.eval_every, 0.1))
    n = train.count()
    test.count()
    metric = "auc" if args.model == "ctr" else "accuracy"
    stderr, sys.stderr = sys.stderr, io.StringIO()  # the progress line
    try:
        model = estimator.fitAsync(train, evaluation=test if args.eval_every > 0 else None,
                                   progress=False).result(timeout=3600)
    finally:
        sys.stderr = stderr
    summary = model.summary()
    steps = [w for w in summary["workers"] if w.get("timeMillis")]
    start = min(w["timeMillis"] for w in steps) if steps else None
    history = [(round((e["timeMillis"] - start) / 1000.0, 2), round(e["metrics"][metric], 4))
               for e in summary["evaluator"] if e.get("timeMillis") and metric in e.get("metrics", {})]
    reached = next((s for s, a in history if a >= args.target), None)
    if args.model == "ctr":
        score = {"test_auc": held_out_auc(model, test)}
    else:
        out = model.transform(test)
        score = {"test_accuracy": out.where("prediction = label").count() / out.count()}
    print(json.dumps(dict({"system": "sparkps-" + args.consistency.lower(), "model": args.model, "workers": 2,
                           "ps": args.ps, "epochs": args.epochs,
                           "blas_kernels": os.environ.get("OPENBLAS_CORETYPE"),
                           "convolutions": args.convolutions or "gemm",
                           "examples_per_s": round(n * args.epochs / (summary["elapsedMillis"] / 1000.0)),
                           "seconds_to_target": reached, "target": args.target}, **score, history=history)),
          flush=True)
    spark.stop()


if __name__ == "__main__":
    from tf_ps import training_args

    parser = argparse.ArgumentParser()
    training_args(parser, epochs=5)
    parser.add_argument("--consistency", default="ASYNC")
    parser.add_argument("--blas-kernels", help="OPENBLAS_CORETYPE for ND4J's OpenBLAS (default: sparkps's choice)")
    parser.add_argument("--convolutions", choices=["gemm", "dl4j"],
                        help="SparkPS's convolutions (gemm, the default) or DL4J's own layer's (dl4j)")
    parser.add_argument("--jvm-property", action="append", default=[], metavar="KEY=VALUE",
                        help="a system property of the local JVM, e.g. sparkps.ps.rowsOverBulk=false (repeatable)")
    parser.add_argument("--eval-every", type=float, default=5.0, help="0: no evaluator (throughput alone)")
    main(parser.parse_args())

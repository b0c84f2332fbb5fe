"""Scoring a trained network over a DataFrame: SparkPS's Dl4jModel.transform against Spark's own way to score deep
models, pyspark.ml.functions.predict_batch_udf, with a TensorFlow or a PyTorch model, side by side on one local
Spark with both cores.

    mvn -q -B -ntp -pl estimator package -DskipTests
    PYTHONPATH=estimator/python python3 src/test/python/peers/scoring_benchmark.py --peer tensorflow  # keras pins
    PYTHONPATH=estimator/python python3 src/test/python/peers/scoring_benchmark.py --peer torch       # torch pins

Every system gets the same model (the large MLP 784-1024-1024-10, trained one epoch on Fashion-MNIST by its own
framework: the weights differ, the work does not) and the same rows: Fashion-MNIST's 60,000 training images
repeated to --rows (1,000,000), in 2 partitions, cached before the clock starts. Each system reads its
recommended input column: SparkPS the ML vector column, predict_batch_udf an array<float> column (its tensor
input; the conversion is made and cached beforehand, off the clock). Each writes the class probabilities and the
predicted class to Spark's no-op sink. predict_batch_udf runs the model in Spark's Python workers, one per task,
each with one thread for its framework (the task's core) and batches of --batch rows; Dl4jModel.transform runs it
in the JVM. Prints one line per run, then the median rows/s of each and SparkPS's ratio, round by round.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import sparkps
from sparkps.datasets import fashion_mnist
from sparkps.ml import Dl4jEstimator


def tensorflow_scorer(folder: str, train_x, train_y, batch: int):
    """A tf_keras MLP trained one epoch here, saved, and scored by predict_batch_udf in the Python workers."""
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tensorflow as tf
    from pyspark.ml.functions import predict_batch_udf
    from pyspark.sql.types import ArrayType, FloatType

    keras = tf.keras
    model = keras.Sequential([keras.Input(shape=(784,)), keras.layers.Dense(1024, activation="relu"),
                              keras.layers.Dense(1024, activation="relu"), keras.layers.Dense(10, activation="softmax")])
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy")
    model.fit(train_x, train_y, batch_size=128, epochs=1, verbose=0)
    path = os.path.join(folder, "mlp.h5")
    model.save(path)

    def make_predict_fn():
        os.environ["TF_USE_LEGACY_KERAS"] = "1"
        import tensorflow as tf

        try:  # once per Python worker: TensorFlow refuses it after its runtime has started
            tf.config.threading.set_intra_op_parallelism_threads(1)
            tf.config.threading.set_inter_op_parallelism_threads(1)
        except RuntimeError:
            pass
        loaded = tf.keras.models.load_model(path)

        def predict(x):
            return loaded.predict_on_batch(x)

        return predict

    return predict_batch_udf(make_predict_fn, return_type=ArrayType(FloatType()), batch_size=batch,
                             input_tensor_shapes=[[784]])


def torch_scorer(folder: str, train_x, train_y, batch: int):
    """A PyTorch MLP trained one epoch here, saved, and scored by predict_batch_udf in the Python workers."""
    import torch
    from pyspark.ml.functions import predict_batch_udf
    from pyspark.sql.types import ArrayType, FloatType
    from torch import nn

    def build():
        return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))

    torch.manual_seed(1)
    model = build()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.from_numpy(train_x), torch.from_numpy(train_y.astype("int64"))
    for i in range(0, len(x), 128):
        optimizer.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(x[i:i + 128]), y[i:i + 128]).backward()
        optimizer.step()
    path = os.path.join(folder, "mlp.pt")
    torch.save(model.state_dict(), path)

    def make_predict_fn():
        import torch

        torch.set_num_threads(1)
        loaded = build()
        loaded.load_state_dict(torch.load(path))
        loaded.eval()

        def predict(x):
            with torch.inference_mode():
                return torch.softmax(loaded(torch.from_numpy(x)), dim=1).numpy()

        return predict

    return predict_batch_udf(make_predict_fn, return_type=ArrayType(FloatType()), batch_size=batch,
                             input_tensor_shapes=[[784]])


def timed(frame) -> float:
    started = time.perf_counter()
    frame.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def main(args) -> None:
    import numpy as np
    from pyspark.ml.functions import vector_to_array
    from pyspark.sql import functions as F

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Spark's Python workers: this Python, with the peer
    # The cached rows (a vector of doubles and an array of floats each) take about 10 GB.
    # 4 slots for SparkPS's training (a ps and 2 workers); the scoring runs 2 tasks, one per partition and core.
    spark = sparkps.local_session("local[4]", "peers-scoring", {"spark.ui.enabled": "false",
                                                                "spark.sql.shuffle.partitions": "2",
                                                                "spark.driver.memory": args.memory})
    spark.sparkContext.setLogLevel("ERROR")
    train = fashion_mnist(spark, "train").cache()
    # The peers' models train on the same images in the driver, as numpy arrays.
    rows = train.select(vector_to_array("features", "float32").alias("x"), "label").collect()
    train_x = np.array([r.x for r in rows], dtype=np.float32)
    train_y = np.array([r.label for r in rows], dtype=np.float32)
    copies = -(-args.rows // train_x.shape[0])
    data = train.crossJoin(spark.range(copies).withColumnRenamed("id", "copy")).limit(args.rows).repartition(2)
    data = data.withColumn("pixels", vector_to_array("features", "float32")).cache()
    n = data.count()
    folder = tempfile.mkdtemp(prefix="sparkps-scoring-")
    sys.stderr.write("training the three models one epoch each\n")
    sparkps_model = Dl4jEstimator(network="mlp:1024,1024", numWorkers=2, numPs=1, epochs=1, batchSize=64,
                                  seed=1).fit(train)
    peer = (tensorflow_scorer if args.peer == "tensorflow" else torch_scorer)(folder, train_x, train_y, args.batch)
    systems = {
        "sparkps-transform": lambda: sparkps_model.transform(data).select("probability", "prediction"),
        "predict_batch_udf-" + args.peer: lambda: data.select(peer("pixels").alias("probability")).select(
            "probability", F.expr("array_position(probability, array_max(probability)) - 1").alias("prediction")),
    }
    # Warm both (the JVM's code, the Python workers and their models) on a slice, off the clock.
    for make in systems.values():
        make().limit(20000).write.format("noop").mode("overwrite").save()
    results = {name: [] for name in systems}
    for r in range(args.rounds):
        for name, make in (list(systems.items()) if r % 2 == 0 else list(systems.items())[::-1]):
            seconds = timed(make())
            results[name].append(n / seconds)
            print(json.dumps({"round": r + 1, "system": name, "rows": n, "seconds": round(seconds, 2),
                              "rows_per_s": round(n / seconds)}), flush=True)
    ours, theirs = results["sparkps-transform"], results["predict_batch_udf-" + args.peer]
    for name, rates in results.items():
        print("%-32s median %8.0f rows/s" % (name, statistics.median(rates)))
    ratios = [a / b for a, b in zip(ours, theirs)]
    print("sparkps-transform / predict_batch_udf-%s rows/s: %.2fx (%.2f-%.2f)" % (
        args.peer, statistics.median(ratios), min(ratios), max(ratios)))
    spark.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--peer", choices=["tensorflow", "torch"], required=True)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=1024, help="predict_batch_udf's batch_size")
    parser.add_argument("--memory", default="14g", help="the local JVM's heap (spark.driver.memory)")
    main(parser.parse_args())

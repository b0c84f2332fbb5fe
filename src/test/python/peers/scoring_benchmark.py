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

# This folder's modules: in this process, and in Spark's Python workers (the peer's predict functions).
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [HERE, os.environ.get("PYTHONPATH")] if p)
import ctr_data  # noqa: E402


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


#: The 64-bit id that stands for a missing one in the peers' input arrays (arrays of ids hold no nulls).
MISSING_ID = -(1 << 63)


def click_indexer(vocabulary):
    """A function of a batch of raw ids (rows x 26, MISSING_ID where missing) to rows of one embedding table, as the
    peers' models take them: per field, row 0 for a missing id, 1 for a rare or unseen one, then one per id of the
    field's sorted ``vocabulary`` (ids seen 20 times in the training rows)."""
    import numpy as np

    offsets = np.cumsum([0] + [2 + len(v) for v in vocabulary])

    def index(ids):
        from ctr_data import table_rows

        out = np.empty(ids.shape, dtype=np.int64)
        for f, kept in enumerate(vocabulary):
            out[:, f] = table_rows(ids[:, f], ids[:, f] == MISSING_ID, kept, offsets[f])
        return out

    return index, int(offsets[-1])


def tensorflow_click_scorer(folder: str, vocabulary, batch: int):
    """The click-through model in tf_keras (one table of every field's rows, the 13 numbers, 64-32, one sigmoid),
    saved and scored by predict_batch_udf; its weights are the initializers' (the work per row is the same)."""
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    import tensorflow as tf
    from pyspark.ml.functions import predict_batch_udf
    from pyspark.sql.types import ArrayType, FloatType

    index, rows = click_indexer(vocabulary)
    keras = tf.keras
    numbers, ids = keras.Input(shape=(13,)), keras.Input(shape=(26,), dtype="int64")
    h = keras.layers.Concatenate()([keras.layers.Flatten()(keras.layers.Embedding(rows, 8)(ids)), numbers])
    h = keras.layers.Dense(32, activation="relu")(keras.layers.Dense(64, activation="relu")(h))
    path = os.path.join(folder, "ctr.h5")
    keras.Model([numbers, ids], keras.layers.Dense(1, activation="sigmoid")(h)).save(path)

    def make_predict_fn():
        os.environ["TF_USE_LEGACY_KERAS"] = "1"
        import numpy as np
        import tensorflow as tf

        try:
            tf.config.threading.set_intra_op_parallelism_threads(1)
            tf.config.threading.set_inter_op_parallelism_threads(1)
        except RuntimeError:
            pass
        loaded = tf.keras.models.load_model(path)

        def predict(x_numbers, x_ids):
            p = loaded.predict_on_batch([x_numbers, index(x_ids)])
            return np.concatenate([1 - p, p], axis=1)

        return predict

    return predict_batch_udf(make_predict_fn, return_type=ArrayType(FloatType()), batch_size=batch,
                             input_tensor_shapes=[[13], [26]])


def torch_click_scorer(folder: str, vocabulary, batch: int):
    """The click-through model in PyTorch (an ``nn.EmbeddingBag`` of every field's rows, the 13 numbers, 64-32,
    one logit), saved and scored by predict_batch_udf; its weights are the initializers'."""
    import torch
    from pyspark.ml.functions import predict_batch_udf
    from pyspark.sql.types import ArrayType, FloatType
    from torch import nn

    index, rows = click_indexer(vocabulary)

    class ClickModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = nn.EmbeddingBag(rows, 8, mode="sum")
            self.dense = nn.Sequential(nn.Linear(26 * 8 + 13, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(),
                                       nn.Linear(32, 1))

        def forward(self, x_numbers, x_ids):
            flat = x_ids.reshape(-1)
            found = self.table(flat, torch.arange(0, len(flat), dtype=torch.long)).reshape(len(x_ids), -1)
            return self.dense(torch.cat([found, x_numbers], 1))

    torch.manual_seed(1)
    path = os.path.join(folder, "ctr.pt")
    torch.save(ClickModel().state_dict(), path)

    def make_predict_fn():
        import torch

        torch.set_num_threads(1)
        loaded = ClickModel()
        loaded.load_state_dict(torch.load(path))
        loaded.eval()

        def predict(x_numbers, x_ids):
            with torch.inference_mode():
                p = torch.sigmoid(loaded(torch.from_numpy(x_numbers), torch.from_numpy(index(x_ids))))
                return torch.cat([1 - p, p], 1).numpy()

        return predict

    return predict_batch_udf(make_predict_fn, return_type=ArrayType(FloatType()), batch_size=batch,
                             input_tensor_shapes=[[13], [26]])


def click_systems(spark, args, folder):
    """The click-through model: SparkPS's trained one epoch on 200,000 generated rows (2 workers, 2 ps, SYNC, as the
    peers benchmark trains it), and the peer's; the rows to score are --rows further ones, cached with the peers'
    array columns beside SparkPS's."""
    import numpy as np
    from pyspark.sql import functions as F

    data, train = ctr_data.sparkps_rows(spark, 0, 200_000)
    numeric, categorical = data.numericColumns(), data.categoricalColumns()
    train = train.cache()
    model = ctr_data.sparkps_estimator(data, 8, 0.1, 20, "64,32", 0.002, 1, numWorkers=2, numPs=2, epochs=1,
                                       batchSize=256, consistency="SYNC").fit(train)
    vocabulary = []
    for c in categorical:
        kept = train.where(F.col(c).isNotNull()).groupBy(c).count().where("count >= 20").select(c).collect()
        vocabulary.append(np.sort(np.array([r[0] for r in kept], dtype=np.int64)))
    make = tensorflow_click_scorer if args.peer == "tensorflow" else torch_click_scorer
    peer = make(folder, vocabulary, args.batch)
    _, rows = ctr_data.sparkps_rows(spark, 20_000_000, args.rows)
    rows = rows.withColumn("numbers", F.array(*[F.col(c).cast("float") for c in numeric])) \
        .withColumn("ids", F.array(*[F.coalesce(F.col(c), F.lit(MISSING_ID)) for c in categorical])).cache()
    return rows, {
        "sparkps-transform": lambda: model.transform(rows).select("probability", "prediction"),
        "predict_batch_udf-" + args.peer: lambda: rows.select(peer("numbers", "ids").alias("probability")).select(
            "probability", F.expr("cast(probability[1] > 0.5 as double)").alias("prediction")),
    }


def timed(frame) -> float:
    started = time.perf_counter()
    frame.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def main(args) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # Spark's Python workers: this Python, with the peer
    # The MLP's cached rows (a vector of doubles and an array of floats each) take about 10 GB.
    # 5 slots for SparkPS's training (up to 2 ps and 2 workers, 1 evaluator); the scoring runs 2 tasks, one per
    # partition and core.
    spark = sparkps.local_session("local[5]", "peers-scoring", {"spark.ui.enabled": "false",
                                                                "spark.sql.shuffle.partitions": "2",
                                                                "spark.driver.memory": args.memory})
    spark.sparkContext.setLogLevel("ERROR")
    folder = tempfile.mkdtemp(prefix="sparkps-scoring-")
    data, systems = (click_systems if args.model == "ctr" else mlp_systems)(spark, args, folder)
    n = data.count()
    # Warm both (the JVM's code, the Python workers and their models) on a slice, off the clock.
    for make in systems.values():
        make().limit(20000).write.format("noop").mode("overwrite").save()
    results = {name: [] for name in systems}
    for r in range(args.rounds):
        for name, make in (list(systems.items()) if r % 2 == 0 else list(systems.items())[::-1]):
            seconds = timed(make())
            results[name].append(n / seconds)
            print(json.dumps({"round": r + 1, "model": args.model, "system": name, "rows": n,
                              "seconds": round(seconds, 2), "rows_per_s": round(n / seconds)}), flush=True)
    ours, theirs = results["sparkps-transform"], results["predict_batch_udf-" + args.peer]
    for name, rates in results.items():
        print("%-32s median %8.0f rows/s" % (name, statistics.median(rates)))
    ratios = [a / b for a, b in zip(ours, theirs)]
    print("sparkps-transform / predict_batch_udf-%s rows/s: %.2fx (%.2f-%.2f)" % (
        args.peer, statistics.median(ratios), min(ratios), max(ratios)))
    spark.stop()


def mlp_systems(spark, args, folder):
    """The large MLP, trained one epoch by each framework on Fashion-MNIST, and its training images repeated to
    --rows, cached as SparkPS's vector column and the peer's array column."""
    import numpy as np
    from pyspark.ml.functions import vector_to_array
    from pyspark.sql import functions as F

    train = fashion_mnist(spark, "train").cache()
    # The peers' models train on the same images in the driver, as numpy arrays.
    rows = train.select(vector_to_array("features", "float32").alias("x"), "label").collect()
    train_x = np.array([r.x for r in rows], dtype=np.float32)
    train_y = np.array([r.label for r in rows], dtype=np.float32)
    copies = -(-args.rows // train_x.shape[0])
    data = train.crossJoin(spark.range(copies).withColumnRenamed("id", "copy")).limit(args.rows).repartition(2)
    data = data.withColumn("pixels", vector_to_array("features", "float32")).cache()
    sys.stderr.write("training the two models one epoch each\n")
    sparkps_model = Dl4jEstimator(network="mlp:1024,1024", numWorkers=2, numPs=1, epochs=1, batchSize=64,
                                  seed=1).fit(train)
    peer = (tensorflow_scorer if args.peer == "tensorflow" else torch_scorer)(folder, train_x, train_y, args.batch)
    systems = {
        "sparkps-transform": lambda: sparkps_model.transform(data).select("probability", "prediction"),
        "predict_batch_udf-" + args.peer: lambda: data.select(peer("pixels").alias("probability")).select(
            "probability", F.expr("array_position(probability, array_max(probability)) - 1").alias("prediction")),
    }
    return data, systems


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--peer", choices=["tensorflow", "torch"], required=True)
    parser.add_argument("--model", choices=["mlp", "ctr"], default="mlp",
                        help="mlp: the large MLP on Fashion-MNIST; ctr: the click-through model on generated rows")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=1024, help="predict_batch_udf's batch_size")
    parser.add_argument("--memory", default="14g", help="the local JVM's heap (spark.driver.memory)")
    main(parser.parse_args())

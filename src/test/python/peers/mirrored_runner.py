"""spark-tensorflow-distributor's MirroredStrategyRunner, tried once as its README runs it: the large MLP on
Fashion-MNIST in 2 CPU slots of a local Spark (a barrier stage, MultiWorkerMirroredStrategy across the tasks,
tf_keras ``fit`` on ``tf.data``), the global batch of the other peers.

    python src/test/python/peers/mirrored_runner.py [--epochs 3] [--batch 64]

Prints one JSON line from the chief's task: examples/s over the fit (evaluations excluded), seconds to the
target test accuracy (evaluated after each epoch) and the final test accuracy; or the error the runner raised.
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from tf_ps import training_args, unpacked  # noqa: E402


def train(folder, epochs, batch, hidden, lr, seed, target):
    """Runs in each Spark task, inside the runner's MultiWorkerMirroredStrategy scope."""
    import tensorflow as tf

    # The tasks' Python path holds this folder (spark.executorEnv.PYTHONPATH).
    from tf_ps import epoch_clock, images

    keras = tf.keras
    workers = json.loads(os.environ["TF_CONFIG"])["cluster"]["worker"]
    model = keras.Sequential([keras.Input(shape=(784,))]
                             + [keras.layers.Dense(int(h), activation="relu") for h in hidden.split(",")]
                             + [keras.layers.Dense(10, activation="softmax")])
    model.compile(optimizer=keras.optimizers.Adam(lr), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    global_batch = batch * len(workers)  # MultiWorkerMirroredStrategy splits the global batch among the workers
    options = tf.data.Options()  # one file of records: each worker takes every n-th batch
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    data = images(tf, folder, "train").shuffle(60000, seed=seed).repeat().batch(global_batch) \
        .prefetch(tf.data.AUTOTUNE).with_options(options)
    test = images(tf, folder, "t10k").batch(1000).with_options(options)
    steps = 60000 // global_batch

    # Every worker takes part in each evaluation, as the strategy needs.
    clock = epoch_clock(keras, lambda m: float(m.evaluate(test, verbose=0)[1]))
    model.fit(data, epochs=epochs, steps_per_epoch=steps, callbacks=[clock], verbose=0)
    seconds = clock.history[-1][0]  # training ends with the last epoch, as for the parameter servers
    reached = next((s for s, a in clock.history if a >= target), None)
    return {"workers": len(workers), "examples_per_s": round(steps * global_batch * epochs / seconds),
            "seconds_to_target": reached, "target": target, "test_accuracy": clock.history[-1][1],
            "history": clock.history}


def main(args) -> None:
    from pyspark.sql import SparkSession

    started = time.time()
    spark = (SparkSession.builder.master("local[2]").appName("mirrored-strategy-runner")
             .config("spark.executorEnv.TF_USE_LEGACY_KERAS", "1")
             .config("spark.executorEnv.TF_CPP_MIN_LOG_LEVEL", "3")
             .config("spark.executorEnv.OMP_NUM_THREADS", "1")
             .config("spark.executorEnv.PYTHONPATH", os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
             .getOrCreate())
    try:
        from spark_tensorflow_distributor import MirroredStrategyRunner

        result = MirroredStrategyRunner(num_slots=2, use_gpu=False).run(
            train, folder=unpacked(args.data), epochs=args.epochs, batch=args.batch, hidden=args.hidden, lr=args.lr,
            seed=args.seed, target=args.target)
        print(json.dumps(dict({"system": "tensorflow-mirrored-runner", "model": "mlp", "epochs": args.epochs},
                              **result)), flush=True)
    except Exception as e:  # recorded as the peer's outcome
        lines = [line for line in str(e).splitlines() if line.strip()]
        print(json.dumps({"system": "tensorflow-mirrored-runner",
                          "failed_after_seconds": round(time.time() - started, 1), "error": type(e).__name__,
                          "message": " | ".join(lines[-3:])[:600]}), flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    training_args(parser, epochs=3)
    a = parser.parse_args()
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    main(a)

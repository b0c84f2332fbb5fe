"""TensorFlow's parameter servers as users run them: ParameterServerStrategy over a real cluster of processes.

A ps and two workers are each a ``tf.distribute.Server`` in a process of its own, started by this script; this
process is the chief (the coordinator): it builds the Keras model under the strategy, whose variables live on the
ps, and ``Model.fit`` dispatches the steps to the workers through a ``ClusterCoordinator``, asynchronously, as
the strategy trains. Input is ``tf.data`` reading Fashion-MNIST's IDX files on each worker (its shard, shuffled,
batched, prefetched). Keras 3 does not take ParameterServerStrategy, so the model is tf_keras's (Keras 2).

    python src/test/python/peers/tf_ps.py --epochs 5 --batch 64 [--model mlp --hidden 1024,1024 | --model lenet] [--target 0.88]

Prints one JSON line: examples/s to the last epoch's end (evaluation excluded), seconds to the target test
accuracy (evaluated on the chief after each epoch) and the final test accuracy.

``--model ctr --ctr-data FOLDER`` trains the click-through model on the records ctr_data.py writes, through the
strategy's own custom loop (``run_ctr``): one embedding table split over the ps, AdaGrad on it and Adam on the
dense layers; its measure is the held-out AUC.
"""

import argparse
import gzip
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["TF_USE_LEGACY_KERAS"] = "1"



def training_args(parser, epochs: int) -> None:
    """The arguments every peer's script takes alike: data, model, optimizer, minibatch, target."""
    parser.add_argument("--data", help="the folder of Fashion-MNIST's IDX files (default: sparkps.datasets')")
    parser.add_argument("--epochs", type=int, default=epochs)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--model", default="mlp", choices=["mlp", "lenet", "ctr"],
                        help="mlp (of --hidden), lenet, or ctr: the click-through model (an embedding table, then --hidden)")
    parser.add_argument("--hidden", default="1024,1024")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--target", type=float, default=0.88, help="test accuracy, or AUC for ctr")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ps", type=int, default=1, help="parameter servers, where the system has them")
    parser.add_argument("--ctr-data", help="ctr: the folder ctr_data.py wrote")
    parser.add_argument("--rows", type=int, default=3_000_000, help="ctr: training rows (SparkPS generates them)")
    parser.add_argument("--min-count", type=int, default=20, help="ctr: sightings before an id gets a row")
    parser.add_argument("--dim", type=int, default=8, help="ctr: the embedding rows' width")
    parser.add_argument("--table-lr", type=float, default=0.1, help="ctr: AdaGrad's rate on the table")
    parser.add_argument("--evals-per-epoch", type=int, default=4, help="ctr: held-out AUC this often, off the clock")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unpacked(folder) -> str:
    """Fashion-MNIST's IDX files (from ``folder``, else where sparkps.datasets reads them) gunzipped into a folder
    of their own (tf.data reads fixed-length records)."""
    if folder is None:
        from sparkps.datasets import FASHION_MNIST as folder
    out = os.path.join(tempfile.gettempdir(), "sparkps-peers-fashion-mnist")
    os.makedirs(out, exist_ok=True)
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                 "t10k-labels-idx1-ubyte"):
        target = os.path.join(out, name)
        if not os.path.exists(target):
            with gzip.open(os.path.join(folder, name + ".gz")) as src, open(target + ".part", "wb") as dst:
                dst.write(src.read())
            os.replace(target + ".part", target)
    return out


def images(tf, folder: str, subset: str):
    """(pixels in [0, 1], label) pairs of an IDX set, as tf.data records."""
    x = tf.data.FixedLengthRecordDataset(os.path.join(folder, subset + "-images-idx3-ubyte"), 784, header_bytes=16)
    y = tf.data.FixedLengthRecordDataset(os.path.join(folder, subset + "-labels-idx1-ubyte"), 1, header_bytes=8)
    x = x.map(lambda r: tf.cast(tf.io.decode_raw(r, tf.uint8), tf.float32) / 255.0)
    y = y.map(lambda r: tf.cast(tf.io.decode_raw(r, tf.uint8)[0], tf.int64))
    return tf.data.Dataset.zip((x, y))


def epoch_clock(keras, accuracy):
    """A Keras callback that keeps the training time (evaluations left out) and, after each epoch, the test
    accuracy ``accuracy(model)`` gives, as ``history``: (seconds trained, accuracy) pairs."""

    class Clock(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.started = self.eval_time = 0.0
            self.history = []

        def on_train_begin(self, logs=None):
            self.started = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            t = time.perf_counter()
            trained = t - self.started - self.eval_time
            score = accuracy(self.model)
            self.eval_time += time.perf_counter() - t
            self.history.append((round(trained, 2), score))

    return Clock()


def serve(args) -> None:
    import tensorflow as tf

    # Kernels on the task's cores; a second inter-op thread so that a step blocked on input or a remote read
    # does not hold the only one (a single inter-op thread deadlocks the workers).
    config = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=args.threads,
                                      inter_op_parallelism_threads=args.threads + 1)
    server = tf.distribute.Server(tf.train.ClusterSpec(json.loads(args.cluster)), job_name=args.job,
                                  task_index=args.index, protocol="grpc", config=config, start=True)
    server.join()


def single(args) -> None:
    """The floor: the same model, input and global batch in one process on every core, no parameter server."""
    args.batch *= args.workers  # the distributed runs' global batch, in one minibatch
    if args.model == "ctr":
        run_ctr(args, args.ctr_data, None)
    else:
        run(args, unpacked(args.data), None)


def main(args) -> None:
    folder = args.ctr_data if args.model == "ctr" else unpacked(args.data)
    cluster = {"chief": ["127.0.0.1:%d" % free_port()], "ps": ["127.0.0.1:%d" % free_port() for _ in range(args.ps)],
               "worker": ["127.0.0.1:%d" % free_port() for _ in range(args.workers)]}
    # One core's worth of threads per worker, as SparkPS's tasks have; the ps and the chief share what is left.
    roles = [("ps", i, 1) for i in range(args.ps)] + [("worker", i, 1) for i in range(args.workers)]
    servers = [subprocess.Popen([sys.executable, __file__, "serve", "--cluster", json.dumps(cluster), "--job", job,
                                 "--index", str(i), "--threads", str(t)]) for job, i, t in roles]
    if args.kill:
        import threading

        victim = servers[[job + ":" + str(i) for job, i, _ in roles].index(args.kill)]

        def kill_later():
            time.sleep(args.kill_after)
            victim.kill()  # SIGKILL, as kill -9
            print(json.dumps({"killed": args.kill, "at_seconds": args.kill_after, "wall": time.time()}), flush=True)

        threading.Thread(target=kill_later, daemon=True).start()
    try:
        started = time.time()
        try:
            (run_ctr if args.model == "ctr" else run)(args, folder, cluster)
        except Exception as e:  # what a fault does to the strategy's fit: recorded, not hidden
            print(json.dumps({"system": "tensorflow-ps", "failed_after_seconds": round(time.time() - started, 1),
                              "error": type(e).__name__, "message": str(e).splitlines()[0][:300]}), flush=True)
            if not args.kill:
                raise
    finally:
        for p in servers:
            p.kill()
            p.wait(timeout=30)


def strategy_for(tf, cluster, partitioned: bool = False):
    """The chief's ParameterServerStrategy over ``cluster`` (one intra-op thread, two inter-op), its variables of
    256 KiB and more split over the ps when ``partitioned``; TensorFlow's default strategy and threads over all
    cores when ``cluster`` is None (one process)."""
    if cluster is None:
        return tf.distribute.get_strategy()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(2)
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
        tf.train.ClusterSpec(cluster), task_type="chief", task_id=0, rpc_layer="grpc")
    partitioner = tf.distribute.experimental.partitioners.MinSizePartitioner(
        min_shard_bytes=256 << 10, max_shards=len(cluster["ps"])) if partitioned else None
    return tf.distribute.experimental.ParameterServerStrategy(resolver, variable_partitioner=partitioner)


def run(args, folder, cluster) -> None:
    import numpy as np
    import tensorflow as tf

    strategy = strategy_for(tf, cluster)
    workers = 1 if cluster is None else args.workers
    keras = tf.keras
    hidden = [int(h) for h in args.hidden.split(",")]
    with strategy.scope():
        if args.model == "lenet":  # DL4J's lenet preset: two 5x5 convolutions (20, 50) with 2x2 max pools, 500 ReLU
            layers = [keras.Input(shape=(784,)), keras.layers.Reshape((28, 28, 1)),
                      keras.layers.Conv2D(20, 5, activation="relu"), keras.layers.MaxPooling2D(2),
                      keras.layers.Conv2D(50, 5, activation="relu"), keras.layers.MaxPooling2D(2),
                      keras.layers.Flatten(), keras.layers.Dense(500, activation="relu")]
        else:
            layers = [keras.Input(shape=(784,))] + [keras.layers.Dense(h, activation="relu") for h in hidden]
        model = keras.Sequential(layers + [keras.layers.Dense(10, activation="softmax")])
        model.compile(optimizer=keras.optimizers.Adam(args.lr), loss="sparse_categorical_crossentropy",
                      steps_per_execution=args.steps_per_execution)

    def dataset_fn(context):
        ds = images(tf, folder, "train").shard(context.num_input_pipelines, context.input_pipeline_id)
        return ds.shuffle(60000 // context.num_input_pipelines, seed=args.seed).repeat().batch(args.batch) \
            .prefetch(tf.data.AUTOTUNE)

    test = images(tf, folder, "t10k").batch(1000)
    test_x = np.concatenate([x.numpy() for x, _ in test])
    test_y = np.concatenate([y.numpy() for _, y in test])
    steps = 60000 // (args.batch * workers)  # an epoch: each example once, over all workers

    def accuracy(model):
        # On the chief, reading the variables from the ps (predict would need a per-worker dataset).
        scores = np.concatenate([model(test_x[i:i + 2000], training=False).numpy()
                                 for i in range(0, len(test_x), 2000)])
        return float(np.mean(np.argmax(scores, 1) == test_y))

    clock = epoch_clock(keras, accuracy)
    if cluster is None:
        data = dataset_fn(tf.distribute.InputContext())
    else:
        data = keras.utils.experimental.DatasetCreator(dataset_fn)
    model.fit(data, epochs=args.epochs, steps_per_epoch=steps, callbacks=[clock], verbose=0)
    # Training ends with the last epoch (fit joins every scheduled step at each epoch's end): what fit does after
    # it is not training. In one 8-epoch run the strategy's fit returned 70 s after its last epoch.
    train_seconds = clock.history[-1][0]
    reached = next((s for s, a in clock.history if a >= args.target), None)
    print(json.dumps({"system": "tensorflow-ps" if cluster else "tensorflow-1-process", "model": args.model,
                      "workers": workers,
                      "ps": 1 if cluster else 0, "epochs": args.epochs,
                      "examples_per_s": round(steps * args.batch * workers * args.epochs / train_seconds),
                      "seconds_to_target": None if reached is None else round(reached, 1), "target": args.target,
                      "test_accuracy": clock.history[-1][1], "history": clock.history}), flush=True)


def run_ctr(args, folder, cluster) -> None:
    """The click-through model: one embedding table (every field's rows, sharded over the ps by the strategy's
    variable partitioner), the 13 numbers beside the rows, dense layers of --hidden, one logit. AdaGrad on the
    table and Adam on the rest, as SparkPS trains them; Keras ``fit`` takes one optimizer, so the steps are the
    strategy's own custom loop: ``ClusterCoordinator.schedule`` of a ``tf.function`` of --steps-per-execution
    steps, each on a worker's ``tf.data`` input (fixed-length records, shuffled, batched, decoded a batch at a
    time, prefetched). The held-out AUC is taken on the chief --evals-per-epoch times an epoch, off the clock."""
    import numpy as np
    import tensorflow as tf
    from ctr_data import RECORD, auc, meta, read

    info = meta(folder)
    # The strategy's recommended sharding: variables of 256 KiB and more split over the ps.
    strategy = strategy_for(tf, cluster, partitioned=True)
    workers = 1 if cluster is None else args.workers
    keras = tf.keras
    with strategy.scope():
        numbers = keras.Input(shape=(13,), name="numbers")
        ids = keras.Input(shape=(26,), dtype="int32", name="ids")
        # Initialized and updated as SparkPS's tables are: uniform in +-0.01; AdaGrad whose accumulators start
        # near 0 (Keras' default start, 0.1, would take ten times smaller first steps).
        table = keras.layers.Embedding(info["table_rows"], args.dim, name="table",
                                       embeddings_initializer=keras.initializers.RandomUniform(-0.01, 0.01))
        h = keras.layers.Concatenate()([keras.layers.Flatten()(table(ids)), numbers])
        for width in [int(w) for w in args.hidden.split(",")]:
            h = keras.layers.Dense(width, activation="relu")(h)
        model = keras.Model([numbers, ids], keras.layers.Dense(1)(h))
        rows_optimizer = keras.optimizers.legacy.Adagrad(args.table_lr, initial_accumulator_value=1e-6)
        dense_optimizer = keras.optimizers.legacy.Adam(args.lr)
    table_vars = table.trainable_variables
    dense_vars = [v for v in model.trainable_variables if all(v is not t for t in table_vars)]
    record = RECORD.itemsize

    def decode(r):  # a batch of records: the click, the numbers, the ids (their bytes read as int32)
        x = tf.reshape(tf.io.decode_raw(r, tf.float32), (-1, record // 4))
        return x[:, 1:14], tf.bitcast(x[:, 14:], tf.int32), x[:, 0]

    def dataset_fn(context):
        ds = tf.data.FixedLengthRecordDataset(os.path.join(folder, "train.bin"), record)
        ds = ds.shard(context.num_input_pipelines, context.input_pipeline_id)
        return ds.shuffle(100_000, seed=args.seed).repeat().batch(args.batch, drop_remainder=True) \
            .map(decode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    def replica_step(x_numbers, x_ids, y):
        with tf.GradientTape() as tape:
            logits = model([x_numbers, x_ids], training=True)[:, 0]
            loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))
        grads = tape.gradient(loss, table_vars + dense_vars)
        rows_optimizer.apply_gradients(zip(grads[:len(table_vars)], table_vars))
        dense_optimizer.apply_gradients(zip(grads[len(table_vars):], dense_vars))
        return loss

    k = args.steps_per_execution

    @tf.function
    def steps(iterator):
        for _ in tf.range(k):
            loss = strategy.run(replica_step, args=next(iterator))
        return loss

    test = read(os.path.join(folder, "test.bin"))

    def held_out_auc():
        scores = np.concatenate([model([test["numbers"][i:i + 10000], test["ids"][i:i + 10000]], training=False)
                                 .numpy()[:, 0] for i in range(0, len(test), 10000)])
        return auc(scores, test["label"])

    if cluster is None:
        iterator = iter(dataset_fn(tf.distribute.InputContext()))
        coordinator = None
    else:
        coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
        iterator = iter(coordinator.create_per_worker_dataset(
            tf.function(lambda: strategy.distribute_datasets_from_function(dataset_fn))))
    per_epoch = info["rows"] // (args.batch * workers)  # steps: each row once, over all workers
    chunk = max(k, per_epoch // args.evals_per_epoch // k * k)
    history, trained, done = [], 0.0, 0
    while done < per_epoch * args.epochs:
        n = min(chunk, per_epoch * args.epochs - done) // k
        t = time.perf_counter()
        for _ in range(max(n, 1)):
            if coordinator is None:
                steps(iterator)
            else:
                coordinator.schedule(steps, args=(iterator,))
        if coordinator is not None:
            coordinator.join()
        trained += time.perf_counter() - t
        done += max(n, 1) * k
        history.append((round(trained, 2), round(held_out_auc(), 4)))
    reached = next((s for s, a in history if a >= args.target), None)
    print(json.dumps({"system": "tensorflow-ps" if cluster else "tensorflow-1-process", "model": "ctr",
                      "workers": workers, "ps": len(cluster["ps"]) if cluster else 0, "epochs": args.epochs,
                      "examples_per_s": round(done * args.batch * workers / trained),
                      "seconds_to_target": reached, "target": args.target, "test_auc": history[-1][1],
                      "planted_auc": info["planted_auc"], "history": history}), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", nargs="?", default="train", choices=["train", "single", "serve"])
    parser.add_argument("--cluster")
    parser.add_argument("--job")
    parser.add_argument("--index", type=int)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    training_args(parser, epochs=5)
    parser.add_argument("--steps-per-execution", type=int, default=1)
    parser.add_argument("--kill", help="ps:0 or worker:N, killed with SIGKILL --kill-after seconds into the run")
    parser.add_argument("--kill-after", type=float, default=20.0)
    a = parser.parse_args()
    {"serve": serve, "single": single, "train": main}[a.mode](a)

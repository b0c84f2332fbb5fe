"""A Keras MLP imported through DL4J's Keras import against the same network written in DL4J, trained the same
way by SparkPS on Fashion-MNIST, side by side in one Spark application, alternating.

    mvn -q -B -ntp -pl estimator package -DskipTests
    grep -E '#.* keras( |$)' estimator/python/requirements.txt | python3 -m pip install -r /dev/stdin
    PYTHONPATH=estimator/python python3 src/test/python/keras_import_benchmark.py [rounds] [epochs]

Both networks are 784-256-10 (ReLU, softmax), Adam at 0.001, cross-entropy on the class index, 2 workers and
1 ps (SYNC), minibatches of 64 per worker. The Keras one is a tf_keras Sequential compiled with
sparse_categorical_crossentropy and handed to the estimator as it is; the DL4J one is the `mlp:256` preset. Each
round trains both with a seed of its own (the DL4J one's initialization and both shuffles) and scores them on the
10,000 test images. Prints each fit's test accuracy and examples/s, then the medians and the median of the
rounds' accuracy differences, Keras minus DL4J, in points.
"""

import io
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import sparkps  # noqa: E402
from sparkps.datasets import fashion_mnist  # noqa: E402
from sparkps.ml import Dl4jEstimator  # noqa: E402


def keras_mlp(seed: int):
    import tf_keras as keras

    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input(shape=(784,)), keras.layers.Dense(256, activation="relu"),
                              keras.layers.Dense(10, activation="softmax")], name="mlp_256")
    model.compile(optimizer=keras.optimizers.Adam(0.001), loss="sparse_categorical_crossentropy")
    return model


def main(rounds: int, epochs: int) -> None:
    spark = sparkps.local_session("local[4]", "keras-import-benchmark")
    spark.sparkContext.setLogLevel("ERROR")
    train = fashion_mnist(spark, "train").cache()
    test = fashion_mnist(spark, "t10k").cache()
    n = train.count()
    test.count()
    settings = dict(numWorkers=2, numPs=1, epochs=epochs, batchSize=64)

    def run(network, seed):
        estimator = Dl4jEstimator(network=network, seed=seed, **settings)
        started = time.perf_counter()
        model = estimator.fit(train)
        wall = time.perf_counter() - started
        out = model.transform(test)
        return out.where("prediction = label").count() / out.count(), n * epochs / wall

    sys.stderr = io.StringIO()  # the progress lines (kept out of the figures' output)
    run("mlp:256", 100), run(keras_mlp(100), 100)  # warm-up: JIT, the cached data, ND4J's first allocations
    figures = {"dl4j": [], "keras": []}
    for r in range(rounds):
        seed = r + 1
        order = [("dl4j", lambda: run("mlp:256", seed)), ("keras", lambda: run(keras_mlp(seed), seed))]
        for name, fit in (order if r % 2 == 0 else order[::-1]):
            accuracy, rate = fit()
            figures[name].append((accuracy, rate))
            print("round %d %-5s  test accuracy %.4f  %8.0f examples/s" % (r + 1, name, accuracy, rate), flush=True)
    gaps = [100 * (k[0] - d[0]) for k, d in zip(figures["keras"], figures["dl4j"])]
    print("test accuracy, median: dl4j %.4f, keras %.4f; keras - dl4j, median of the rounds: %+.2f points "
          "(%+.2f to %+.2f; target within 0.5)"
          % (statistics.median(f[0] for f in figures["dl4j"]), statistics.median(f[0] for f in figures["keras"]),
             statistics.median(gaps), min(gaps), max(gaps)))
    print("examples/s, median: dl4j %.0f, keras %.0f (%.3fx)"
          % (statistics.median(f[1] for f in figures["dl4j"]), statistics.median(f[1] for f in figures["keras"]),
             statistics.median(f[1] for f in figures["keras"]) / statistics.median(f[1] for f in figures["dl4j"])))
    spark.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5, int(sys.argv[2]) if len(sys.argv) > 2 else 3)

"""The Python layer's cost: the same fit started from Python (sparkps.ml, progress shown) and from Java (the
JVM estimator's own fit, called directly), side by side in one Spark application, alternating.

    mvn -q -B -ntp -pl estimator package -DskipTests
    PYTHONPATH=estimator/python python3 src/test/python/python_layer_benchmark.py [rounds] [epochs]

Prints each fit's examples/s (the training set's examples times the epochs, over the fit call's wall time,
and over the run's own elapsed time from its summary) and the median of the rounds' ratios, Python over
Java, with the lowest and highest round.
"""

import io
import statistics
import sys
import time

import sparkps
from sparkps.datasets import fashion_mnist
from sparkps.ml import Dl4jEstimator


def main(rounds: int, epochs: int) -> None:
    spark = sparkps.local_session("local[4]", "python-layer-benchmark")
    spark.sparkContext.setLogLevel("ERROR")
    train = fashion_mnist(spark, "train").cache()
    n = train.count()
    estimator = Dl4jEstimator(network="mlp:256", numWorkers=2, numPs=1, epochs=epochs, batchSize=64, seed=7)
    java = estimator._java_obj

    def from_java():
        estimator._transfer_params_to_java()
        started = time.perf_counter()
        model = java.fit(train._jdf)
        wall = time.perf_counter() - started
        return wall, model.summary().elapsed().toMillis() / 1000.0

    def from_python():
        started = time.perf_counter()
        model = estimator.fit(train)  # the Python layer as users run it: its poller and progress line
        wall = time.perf_counter() - started
        return wall, model.summary()["elapsedMillis"] / 1000.0

    sys.stderr = io.StringIO()  # the progress lines (kept out of the figures' output)
    from_java(), from_python()  # warm-up: JIT, the cached data, ND4J's first allocations
    figures = {"java": [], "python": []}
    for r in range(rounds):
        order = [("java", from_java), ("python", from_python)]
        for name, fit in (order if r % 2 == 0 else order[::-1]):
            wall, run = fit()
            figures[name].append((n * epochs / wall, n * epochs / run))
            print("round %d %-6s  %8.0f examples/s (fit call)  %8.0f examples/s (run)"
                  % (r + 1, name, n * epochs / wall, n * epochs / run), flush=True)
    for i, what in ((0, "fit call"), (1, "run")):
        ratios = [p[i] / j[i] for p, j in zip(figures["python"], figures["java"])]
        print("python/java examples/s, %-8s: median of the rounds' ratios %.3fx (%.3f-%.3f); medians java %.0f, "
              "python %.0f" % (what, statistics.median(ratios), min(ratios), max(ratios),
                               statistics.median(f[i] for f in figures["java"]),
                               statistics.median(f[i] for f in figures["python"])))
    spark.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5, int(sys.argv[2]) if len(sys.argv) > 2 else 1)

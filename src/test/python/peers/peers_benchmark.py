"""SparkPS side by side with what users would pick instead, on the same model, data, cores and global batch.

    mvn -q -B -ntp -pl estimator package -DskipTests
    grep -E '#.* keras( |$)' estimator/python/requirements.txt | python3 -m pip install -r /dev/stdin
    PYTHONPATH=estimator/python python3 src/test/python/peers/peers_benchmark.py [rounds] [epochs] [model] [eval]

Each round runs every system once, the order turning, each in processes of its own (one system at a time on
the machine): TensorFlow in one process (the floor), TensorFlow's ParameterServerStrategy (a ps, two workers
and the chief as processes), PyTorch's TorchDistributor (2 processes, DDP over gloo; PEERS_TORCH_PYTHON names a
Python with the requirements' torch lines when it is not this one), spark-tensorflow-distributor's
MirroredStrategyRunner (the MLP only: 2 Spark tasks, synchronous all-reduce), and SparkPS ASYNC and SYNC
(2 workers, 1 ps); with PEERS_PRESCOTT=1 also SparkPS ASYNC on ND4J's OpenBLAS SSE3 kernels, as it ran before
it set them itself, and with PEERS_DL4J_CONVOLUTIONS=1 also SparkPS ASYNC on DL4J's own convolution layer, as it
ran before it computed each convolution's pass as one matrix product. PEERS_ROWS_OVER_GRPC=1 adds SparkPS with
the tables' rows in gRPC calls (as before they took the ps's bulk channels), PEERS_SOCKETS=1 each SparkPS system
again with its ps reached over their sockets (as on a cluster), and PEERS_ONLY (names, comma-separated) runs a
subset of the systems.
The model is ``mlp``, the large MLP 784-1024-1024-10 (target 88%), or ``lenet``, DL4J's LeNet-like preset
(target 90%); Adam 0.001, 64 examples per worker and step (128 in the one process). Or ``ctr``, the click-through
model on 3,000,000 generated rows of Criteo's shape (ctr_data.py writes the peers' copy first): 26 fields of
dim 8 on AdaGrad 0.1 (sharded over 2 ps where the system has them), the 13 numbers, dense layers 64-32 on Adam
0.002, 256 rows per worker and step; its measure is the held-out AUC and its target the planted model's less
0.01. (MirroredStrategyRunner runs the MLP only.) The peers score the test
images after each epoch, off the clock; SparkPS's evaluator scores them every ``eval`` seconds as it trains
(default 0: no evaluator, examples/s alone, no time to the target). Prints each run's JSON line, then per
system the median examples/s, test accuracy and seconds to the target, and the median over the rounds of the
ratio of SparkPS's examples/s to each peer's in the same round.
"""

import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
#: The test accuracy each model's time to target is measured to (ctr's: the planted model's AUC less 0.01).
TARGETS = {"mlp": 0.88, "lenet": 0.90}
#: The click-through model's training rows (1 epoch reaches the target, as SparkPS measured it) and the sightings
#: before an id gets a row of its own.
CTR_ROWS, CTR_MIN_COUNT = 3_000_000, 20
#: Steps in each function the coordinator schedules: the strategy's way to spread its per-step cost over more of
#: the click-through model's small steps (in 200,000-row trials 1 step ran 24,445 examples/s, 8 steps 23,972 and
#: 35,265, 32 steps 36,556).
CTR_STEPS_PER_EXECUTION = 32

sys.path.insert(0, HERE)
import ctr_data  # noqa: E402


def systems(epochs: int, model: str, eval_every: float):
    common = ["--epochs", str(epochs), "--model", model]
    if model == "ctr":  # the same rows for all; AdaGrad on the table, Adam on the dense layers; 2 ps to shard over
        folder = ctr_data.prepare(CTR_ROWS, CTR_MIN_COUNT)
        target = ctr_data.meta(folder)["planted_auc"] - 0.01
        common += ["--ctr-data", folder, "--rows", str(CTR_ROWS), "--batch", "256", "--hidden", "64,32",
                   "--lr", "0.002", "--table-lr", "0.1", "--dim", "8", "--ps", "2", "--target", "%.4f" % target]
    else:
        common += ["--target", str(TARGETS[model])]
    torch = os.environ.get("PEERS_TORCH_PYTHON", sys.executable)
    out = {
        "torch-distributor": [torch, os.path.join(HERE, "torch_side.py")] + common,
        "tensorflow-1-process": [sys.executable, os.path.join(HERE, "tf_ps.py"), "single"] + common,
        "tensorflow-ps": [sys.executable, os.path.join(HERE, "tf_ps.py"), "train"] + common
        + (["--steps-per-execution", str(CTR_STEPS_PER_EXECUTION)] if model == "ctr" else []),
        "sparkps-async": [sys.executable, os.path.join(HERE, "sparkps_side.py"), "--consistency", "ASYNC", "--eval-every",
                          str(eval_every)]
        + common,
        "sparkps-sync": [sys.executable, os.path.join(HERE, "sparkps_side.py"), "--consistency", "SYNC", "--eval-every",
                         str(eval_every)]
        + common,
    }
    if model == "mlp":
        # spark-tensorflow-distributor's MirroredStrategyRunner: synchronous all-reduce across 2 Spark tasks.
        out["tensorflow-mirrored-runner"] = [sys.executable, os.path.join(HERE, "mirrored_runner.py")] + common
    if os.environ.get("PEERS_PRESCOTT"):
        # SparkPS as it ran before it chose ND4J's OpenBLAS kernels itself: on a CPU newer than OpenBLAS 0.3.19
        # knows, its SSE3 (Prescott) kernels.
        out["sparkps-async-prescott"] = out["sparkps-async"] + ["--blas-kernels", "Prescott"]
    if os.environ.get("PEERS_DL4J_CONVOLUTIONS"):
        out["sparkps-async-dl4j-convolutions"] = out["sparkps-async"] + ["--convolutions", "dl4j"]
    if os.environ.get("PEERS_ROWS_OVER_GRPC"):
        # The tables' rows in gRPC calls, as they travelled before they took the ps's bulk channels.
        for mode in ("async", "sync"):
            out["sparkps-%s-rows-over-grpc" % mode] = out["sparkps-" + mode] + [
                "--jvm-property", "sparkps.ps.rowsOverBulk=false"]
    if os.environ.get("PEERS_SOCKETS"):
        # SparkPS's ps reached over their sockets although they share the workers' JVM, as on a cluster.
        for name in [n for n in out if n.startswith("sparkps-")]:
            out[name + "-sockets"] = out[name] + ["--jvm-property", "sparkps.ps.sameJvmTransfers=false"]
    only = os.environ.get("PEERS_ONLY")
    if only:  # a comma-separated subset of the systems, for a focused rerun
        out = {name: argv for name, argv in out.items() if name in only.split(",")}
        if not out:
            raise SystemExit("PEERS_ONLY names none of the systems")
    return out


def run(argv):
    out = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError("%s failed (exit %d): %s" % (" ".join(argv), out.returncode, out.stderr[-2000:]))
    return json.loads(lines[-1])


def to_target(rounds):
    """The median seconds to the target over the rounds, a round that never reached it counting as the longest;
    None when half or more never reached it."""
    seconds = sorted(float("inf") if x.get("seconds_to_target") is None else x["seconds_to_target"] for x in rounds)
    median = statistics.median(seconds)
    return None if median == float("inf") else median


def main(rounds: int, epochs: int, model: str, eval_every: float) -> None:
    named = systems(epochs, model, eval_every)
    results = {name: [] for name in named}
    for r in range(rounds):
        order = list(named.items())
        order = order[r % len(order):] + order[:r % len(order)]
        for name, argv in order:
            result = run(argv)
            results[name].append(result)
            print("round %d %s %s" % (r + 1, name, json.dumps(result)), flush=True)
    for name, rs in results.items():
        failed = [x for x in rs if "error" in x]
        if failed:  # a peer that does not run is recorded with its error, not ranked
            print("%-26s failed: %s: %s" % (name, failed[0]["error"], failed[0]["message"]))
    metric = "test_auc" if model == "ctr" else "test_accuracy"
    medians = {name: (statistics.median(x["examples_per_s"] for x in rs), statistics.median(x[metric] for x in rs),
                      to_target(rs))
               for name, rs in results.items() if not any("error" in x for x in rs)}
    for name, (rate, score, seconds) in medians.items():
        print("%-26s median %6.0f examples/s, %s %.4f after %d epochs, %s to the target" % (
            name, rate, metric.replace("_", " "), score, epochs, "never" if seconds is None else "%.1f s" % seconds))
    for ours in [name for name in medians if name.startswith("sparkps")]:
        for peer in [name for name in medians if not name.startswith("sparkps")]:
            # each round's ratio, side by side in that round: the machine's swing between rounds cancels
            ratios = [a["examples_per_s"] / b["examples_per_s"] for a, b in zip(results[ours], results[peer])]
            print("%s / %s examples/s: %.2fx (rounds %s)" % (ours, peer, statistics.median(ratios),
                                                           ", ".join("%.2f" % r for r in ratios)))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3, int(sys.argv[2]) if len(sys.argv) > 2 else 3,
         sys.argv[3] if len(sys.argv) > 3 else "mlp", float(sys.argv[4]) if len(sys.argv) > 4 else 0.0)

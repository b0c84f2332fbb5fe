"""SparkPS side by side with what users would pick instead, on the same model, data, cores and global batch.

    mvn -q -B -ntp -pl estimator package -DskipTests
    grep -E '#.* keras( |$)' estimator/python/requirements.txt | python3 -m pip install -r /dev/stdin
    PYTHONPATH=estimator/python python3 src/test/python/peers/peers_benchmark.py [rounds] [epochs]

Each round runs every system once, the order turning, each in processes of its own (one system at a time on
the machine): TensorFlow in one process (the floor), TensorFlow's ParameterServerStrategy (a ps, two workers
and the chief as processes), PyTorch's TorchDistributor (2 processes, DDP over gloo; PEERS_TORCH_PYTHON names a
Python with the requirements' torch lines when it is not this one), and SparkPS ASYNC and SYNC (2 workers, 1 ps). The model is the large MLP,
784-1024-1024-10, Adam 0.001, 64 examples per worker and step (128 in the one process). Prints each run's
JSON line, then per system the median examples/s and test accuracy and the ratio of SparkPS's examples/s
to each peer's.
"""

import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def systems(epochs: int):
    common = ["--epochs", str(epochs)]
    torch = os.environ.get("PEERS_TORCH_PYTHON", sys.executable)
    return {
        "torch-distributor": [torch, os.path.join(HERE, "torch_side.py")] + common,
        "tensorflow-1-process": [sys.executable, os.path.join(HERE, "tf_ps.py"), "single"] + common,
        "tensorflow-ps": [sys.executable, os.path.join(HERE, "tf_ps.py"), "train"] + common,
        "sparkps-async": [sys.executable, os.path.join(HERE, "sparkps_side.py"), "--consistency", "ASYNC", "--eval-every", "0"]
        + common,
        "sparkps-sync": [sys.executable, os.path.join(HERE, "sparkps_side.py"), "--consistency", "SYNC", "--eval-every", "0"]
        + common,
    }


def run(argv):
    out = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError("%s failed (exit %d): %s" % (" ".join(argv), out.returncode, out.stderr[-2000:]))
    return json.loads(lines[-1])


def main(rounds: int, epochs: int) -> None:
    named = systems(epochs)
    results = {name: [] for name in named}
    for r in range(rounds):
        order = list(named.items())
        order = order[r % len(order):] + order[:r % len(order)]
        for name, argv in order:
            result = run(argv)
            results[name].append(result)
            print("round %d %s" % (r + 1, json.dumps(result)), flush=True)
    medians = {name: (statistics.median(x["examples_per_s"] for x in rs), statistics.median(x["test_accuracy"] for x in rs))
               for name, rs in results.items()}
    for name, (rate, accuracy) in medians.items():
        print("%-22s median %6.0f examples/s, test accuracy %.4f after %d epochs" % (name, rate, accuracy, epochs))
    for ours in ("sparkps-async", "sparkps-sync"):
        for peer in ("tensorflow-ps", "tensorflow-1-process", "torch-distributor"):
            print("%s / %s examples/s: %.2fx" % (ours, peer, medians[ours][0] / medians[peer][0]))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3, int(sys.argv[2]) if len(sys.argv) > 2 else 3)

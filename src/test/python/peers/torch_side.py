"""PyTorch as Spark users run it: TorchDistributor on the same local Spark, 2 processes, DDP over gloo.

    python src/test/python/peers/torch_side.py --epochs 3

The same network, data, optimizer and minibatch as the other peers (784-1024-1024-10, Adam 0.001, 64 per process
and step). Each process reads Fashion-MNIST's IDX files into tensors, takes its shard through a
DistributedSampler and a DataLoader, and runs one thread (torch.set_num_threads), as each SparkPS worker owns
one core. Prints one JSON line like the other peers' scripts.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tf_ps import training_args, unpacked  # noqa: E402  (the IDX files, gunzipped once; the common arguments)


def train(epochs: int, batch: int, folder: str, model_name: str, hidden: str, lr: float, seed: int, target: float,
          kill_after: float = 0.0):
    import time

    import numpy as np
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if kill_after > 0 and rank == world - 1:  # a fault: the last process kill -9'd mid-run
        import signal
        import threading

        threading.Timer(kill_after, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()

    def idx(name, offset, shape):
        return np.fromfile(os.path.join(folder, name), dtype=np.uint8, offset=offset).reshape(shape)

    x = torch.from_numpy(idx("train-images-idx3-ubyte", 16, (-1, 784)).astype(np.float32) / 255.0)
    y = torch.from_numpy(idx("train-labels-idx1-ubyte", 8, (-1,)).astype(np.int64))
    data = TensorDataset(x, y)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=seed)
    loader = DataLoader(data, batch_size=batch, sampler=sampler, num_workers=0)
    if model_name == "lenet":  # DL4J's lenet preset: two 5x5 convolutions (20, 50) with 2x2 max pools, 500 ReLU
        layers = [nn.Unflatten(1, (1, 28, 28)), nn.Conv2d(1, 20, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(20, 50, 5),
                  nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(800, 500), nn.ReLU()]
        last = 500
    else:
        sizes = [784] + [int(h) for h in hidden.split(",")]
        layers = []
        for a, b in zip(sizes, sizes[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        last = sizes[-1]
    model = DistributedDataParallel(nn.Sequential(*layers, nn.Linear(last, 10)))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()  # on the logits: softmax and cross-entropy in one, as PyTorch recommends
    tx = torch.from_numpy(idx("t10k-images-idx3-ubyte", 16, (-1, 784)).astype(np.float32) / 255.0)
    ty = torch.from_numpy(idx("t10k-labels-idx1-ubyte", 8, (-1,)).astype(np.int64))
    examples = 0
    history = []  # (seconds of training so far, test accuracy) after each epoch, as the chief of TF-PS has them
    evaluating = 0.0
    started = time.perf_counter()
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(xb), yb).backward()
            optimizer.step()
            examples += len(xb)
        t = time.perf_counter()
        # Both processes score the test images (the other one would wait for rank 0 in the next step's
        # all-reduce anyway); the time is left out of the training time, as the other peers leave it out.
        with torch.no_grad():
            model.eval()
            accuracy = float((model.module(tx).argmax(1) == ty).float().mean())
            model.train()
        history.append((round(t - started - evaluating, 2), accuracy))
        dist.barrier()
        evaluating += time.perf_counter() - t
    seconds = time.perf_counter() - started - evaluating
    total = torch.tensor([examples], dtype=torch.long)
    dist.all_reduce(total)
    result = None
    if rank == 0:
        reached = next((s for s, a in history if a >= target), None)
        result = {"system": "torch-distributor", "model": model_name, "workers": world, "ps": 0, "epochs": epochs,
                  "examples_per_s": round(int(total.item()) / seconds), "seconds_to_target": reached,
                  "target": target, "test_accuracy": history[-1][1], "history": history}
    dist.destroy_process_group()
    return result


def main(args) -> None:
    from pyspark.ml.torch.distributor import TorchDistributor
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[2]").appName("peers-torch").config("spark.ui.enabled", "false") \
        .getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    folder = unpacked(args.data)
    distributor = TorchDistributor(num_processes=2, local_mode=True, use_gpu=False)
    started = time.time()
    try:
        result = distributor.run(train, args.epochs, args.batch, folder, args.model, args.hidden, args.lr, args.seed,
                                 args.target, args.kill_after)
    except Exception as e:  # what a fault does to the run: recorded, not hidden
        if not args.kill_after:
            raise
        lines = [line for line in str(e).splitlines() if line.strip()]
        result = {"system": "torch-distributor", "killed": "process %d" % 1, "at_seconds": args.kill_after,
                  "failed_after_seconds": round(time.time() - started, 1), "error": type(e).__name__,
                  "message": " | ".join(lines[-3:])[:600]}
    print(json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    training_args(parser, epochs=3)
    parser.add_argument("--kill-after", type=float, default=0.0,
                        help="kill -9 the second process so many seconds into its training (0: no fault)")
    main(parser.parse_args())

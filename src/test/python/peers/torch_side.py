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


def finished(model_name, epochs, examples, seconds, history, target, metric, **extra):
    """The run's JSON result (examples summed over the processes), returned by every process: TorchDistributor's
    local mode (PySpark 3.5.9) has each process write its return value to the same file and reads whichever came
    last, so each must return rank 0's."""
    import torch
    import torch.distributed as dist

    total = torch.tensor([examples], dtype=torch.long)
    dist.all_reduce(total)
    reached = next((s for s, a in history if a >= target), None)
    out = [dict({"system": "torch-distributor", "model": model_name, "workers": dist.get_world_size(), "ps": 0,
                 "epochs": epochs, "examples_per_s": round(int(total.item()) / seconds),
                 "seconds_to_target": reached, "target": target, metric: history[-1][1]}, **extra, history=history)]
    dist.broadcast_object_list(out, src=0)
    dist.destroy_process_group()
    return out[0]


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
    return finished(model_name, epochs, examples, time.perf_counter() - started - evaluating, history, target,
                    "test_accuracy")


def train_ctr(epochs: int, batch: int, folder: str, hidden: str, lr: float, table_lr: float, dim: int, seed: int,
              target: float, evals_per_epoch: int):
    """The click-through model: one ``nn.EmbeddingBag`` holding every field's rows (AdaGrad),
    the 13 numbers beside the rows, dense layers of ``hidden`` and one logit (Adam), DDP over gloo. Each process
    reads the records into tensors once; a ``DistributedSampler`` in a ``BatchSampler`` hands the DataLoader whole
    minibatches of indices, gathered in one call (PyTorch's fast path for tabular tensors; one row at a time
    through the collate function is several times slower). The held-out AUC is taken --evals-per-epoch times an
    epoch, off the clock."""
    import numpy as np
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import BatchSampler, DataLoader, Dataset, DistributedSampler

    from ctr_data import auc, meta, read

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    info = meta(folder)
    rows = read(os.path.join(folder, "train.bin"))
    numbers, ids = torch.from_numpy(rows["numbers"].copy()), torch.from_numpy(rows["ids"].astype(np.int64))
    labels = torch.from_numpy(rows["label"].copy())

    class Rows(Dataset):
        def __len__(self):
            return len(labels)

        def __getitem__(self, index):  # a whole minibatch of indices
            return numbers[index], ids[index], labels[index]

    sampler = DistributedSampler(Rows(), num_replicas=world, rank=rank, shuffle=True, seed=seed, drop_last=True)
    loader = DataLoader(Rows(), sampler=BatchSampler(sampler, batch, drop_last=True), batch_size=None, num_workers=0)

    class ClickModel(nn.Module):
        def __init__(self):
            super().__init__()
            # Dense gradients: DDP's all-reduce of sparse ones over gloo crashed (SIGSEGV) with this table of
            # 33,724 rows; AdaGrad leaves a row whose gradient is 0 as it was, so the updates are the same.
            self.table = nn.EmbeddingBag(info["table_rows"], dim, mode="sum")
            nn.init.uniform_(self.table.weight, -0.01, 0.01)  # as SparkPS's tables start (PyTorch's: N(0, 1))
            sizes = [26 * dim + 13] + [int(h) for h in hidden.split(",")]
            layers = []
            for a, b in zip(sizes, sizes[1:]):
                layers += [nn.Linear(a, b), nn.ReLU()]
            self.dense = nn.Sequential(*layers, nn.Linear(sizes[-1], 1))

        def forward(self, x_numbers, x_ids):
            flat = x_ids.reshape(-1)  # a bag per (row, field): one id each
            rows_ = self.table(flat, torch.arange(0, len(flat), dtype=torch.long)).reshape(len(x_ids), -1)
            return self.dense(torch.cat([rows_, x_numbers], 1))[:, 0]

    model = DistributedDataParallel(ClickModel())
    table_optimizer = torch.optim.Adagrad(model.module.table.parameters(), lr=table_lr)
    dense_optimizer = torch.optim.Adam(model.module.dense.parameters(), lr=lr)
    loss_fn = nn.BCEWithLogitsLoss()
    test = read(os.path.join(folder, "test.bin"))
    t_numbers, t_ids = torch.from_numpy(test["numbers"].copy()), torch.from_numpy(test["ids"].astype(np.int64))
    per_epoch = len(loader)
    every = max(1, per_epoch // evals_per_epoch)
    examples, history, evaluating, step = 0, [], 0.0, 0
    started = time.perf_counter()
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for i, (xn, xi, y) in enumerate(loader):
            table_optimizer.zero_grad(set_to_none=True)
            dense_optimizer.zero_grad(set_to_none=True)
            loss_fn(model(xn, xi), y).backward()
            table_optimizer.step()
            dense_optimizer.step()
            examples += len(y)
            if (i + 1) % every == 0 or i + 1 == per_epoch:
                t = time.perf_counter()
                with torch.no_grad():
                    score = auc(model.module(t_numbers, t_ids).numpy(), test["label"])
                history.append((round(t - started - evaluating, 2), round(score, 4)))
                dist.barrier()
                evaluating += time.perf_counter() - t
    return finished("ctr", epochs, examples, time.perf_counter() - started - evaluating, history, target, "test_auc",
                    planted_auc=info["planted_auc"])


def main(args) -> None:
    from pyspark.ml.torch.distributor import TorchDistributor
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[2]").appName("peers-torch").config("spark.ui.enabled", "false") \
        .getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    # The processes TorchDistributor starts import this folder's modules (ctr_data) too.
    here = os.path.dirname(os.path.abspath(__file__))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [here, os.environ.get("PYTHONPATH")] if p)
    distributor = TorchDistributor(num_processes=2, local_mode=True, use_gpu=False)
    started = time.time()
    try:
        if args.model == "ctr":
            result = distributor.run(train_ctr, args.epochs, args.batch, args.ctr_data, args.hidden, args.lr,
                                     args.table_lr, args.dim, args.seed, args.target, args.evals_per_epoch)
        else:
            result = distributor.run(train, args.epochs, args.batch, unpacked(args.data), args.model, args.hidden,
                                     args.lr, args.seed, args.target, args.kill_after)
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

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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tf_ps import unpacked  # noqa: E402  (the IDX files, gunzipped once)


def train(epochs: int, batch: int, folder: str, hidden: str, lr: float, seed: int):
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

    def idx(name, offset, shape):
        return np.fromfile(os.path.join(folder, name), dtype=np.uint8, offset=offset).reshape(shape)

    x = torch.from_numpy(idx("train-images-idx3-ubyte", 16, (-1, 784)).astype(np.float32) / 255.0)
    y = torch.from_numpy(idx("train-labels-idx1-ubyte", 8, (-1,)).astype(np.int64))
    data = TensorDataset(x, y)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=seed)
    loader = DataLoader(data, batch_size=batch, sampler=sampler, num_workers=0)
    sizes = [784] + [int(h) for h in hidden.split(",")]
    layers = []
    for a, b in zip(sizes, sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    model = DistributedDataParallel(nn.Sequential(*layers, nn.Linear(sizes[-1], 10)))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()  # on the logits: softmax and cross-entropy in one, as PyTorch recommends
    examples = 0
    started = time.perf_counter()
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(xb), yb).backward()
            optimizer.step()
            examples += len(xb)
    seconds = time.perf_counter() - started
    total = torch.tensor([examples], dtype=torch.long)
    dist.all_reduce(total)
    result = None
    if rank == 0:
        tx = torch.from_numpy(idx("t10k-images-idx3-ubyte", 16, (-1, 784)).astype(np.float32) / 255.0)
        ty = torch.from_numpy(idx("t10k-labels-idx1-ubyte", 8, (-1,)).astype(np.int64))
        with torch.no_grad():
            accuracy = float((model.module(tx).argmax(1) == ty).float().mean())
        result = {"system": "torch-distributor", "workers": world, "ps": 0, "epochs": epochs,
                  "examples_per_s": round(int(total.item()) / seconds), "seconds_to_target": None,
                  "test_accuracy": accuracy, "history": []}
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
    result = distributor.run(train, args.epochs, args.batch, folder, args.hidden, args.lr, args.seed)
    print(json.dumps(result), flush=True)
    spark.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", help="the folder of Fashion-MNIST's IDX files (default: sparkps.datasets')")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--hidden", default="1024,1024")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=1)
    main(parser.parse_args())

"""The click-through model's data for the peers: SparkPS's generated click logs, written once as fixed-length records.

    PYTHONPATH=estimator/python python src/test/python/peers/ctr_data.py --rows 3000000

SparkPS trains on ``sparkps.datasets.ClickThroughData``'s rows as a DataFrame (Criteo's shape: 13 count-like
numeric columns, 26 categorical columns of 64-bit ids, clicks from a planted model). The peers get the same rows
the way their own pipelines read tabular data fastest: a file of fixed-length records (TensorFlow's
``FixedLengthRecordDataset``, NumPy's ``fromfile`` for PyTorch) holding, per row, the click, the 13 numbers as
``log1p`` (as SparkPS's side feeds them) and the 26 ids turned into rows of one embedding table: each field's ids
seen at least ``min_count`` times in the training rows get a row of their own, rarer ids share one, a missing id
another (SparkPS's ``minCount`` admits ids alike, as it trains). Fields follow each other in the table; the
offsets are in ``meta.json`` beside the planted model's AUC on the held-out rows.
"""

import argparse
import json
import os
import tempfile

import numpy as np

#: One row of the records: the click, the 13 numbers (log1p), the 26 ids as rows of the shared table.
RECORD = np.dtype([("label", "<f4"), ("numbers", "<f4", (13,)), ("ids", "<i4", (26,))])
#: Rows of the held-out set: the same range every system scores.
HELD_OUT_FIRST, HELD_OUT_ROWS = 10_000_000, 50_000
#: The generator's settings (as the click-through benchmark and notebooks use them).
SCALE, SIGNAL_IDS, SEED = 0.001, 100, 1


def folder(rows: int, min_count: int, scale: float = SCALE, signal_ids: int = SIGNAL_IDS) -> str:
    suffix = "" if (scale, signal_ids) == (SCALE, SIGNAL_IDS) else "-%g-%d" % (scale, signal_ids)
    return os.path.join(tempfile.gettempdir(), "sparkps-peers-ctr-%d-%d%s" % (rows, min_count, suffix))


def auc(scores, labels) -> float:
    """The exact area under the ROC curve (ties counted half), as Spark's evaluator with numBins 0 gives it."""
    scores = np.asarray(scores, dtype=np.float64).ravel()
    labels = np.asarray(labels).ravel() > 0.5
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    ranks = (ends - (counts - 1) / 2.0)[inverse]  # the average rank of each group of equal scores
    positives = int(labels.sum())
    negatives = len(labels) - positives
    return float((ranks[labels].sum() - positives * (positives + 1) / 2.0) / (positives * negatives))


def read(path: str):
    """The records of ``train.bin`` or ``test.bin`` as one structured NumPy array."""
    return np.fromfile(path, dtype=RECORD)


def meta(path: str) -> dict:
    with open(os.path.join(path, "meta.json")) as f:
        return json.load(f)


def table_rows(values, missing, kept, offset: int):
    """Rows of the shared table for one field's raw ``values``: ``offset`` for a missing one, ``offset + 1`` for an
    id not in the sorted ``kept`` ids, then ``offset + 2 + i`` for the i-th kept id."""
    at = np.minimum(np.searchsorted(kept, values), max(len(kept) - 1, 0))
    found = kept[at] == values if len(kept) else np.zeros(len(values), bool)
    return offset + np.where(missing, 0, np.where(found, 2 + at, 1))


def sparkps_rows(spark, first: int, count: int):
    """The generator and its rows ``first`` to ``first + count`` as SparkPS reads them: the numbers as log1p."""
    from pyspark.sql import functions as F
    from sparkps.datasets import ClickThroughData

    data = ClickThroughData(spark, scale=SCALE, signal_ids=SIGNAL_IDS, seed=SEED)
    frame = data.rows(first, count, 2)
    return data, frame.select("label", *[F.log1p(F.col(c)).alias(c) for c in data.numericColumns()],
                              *data.categoricalColumns())


def sparkps_estimator(data, dim: int, table_lr: float, min_count: int, hidden: str, lr: float, seed: int, **params):
    """SparkPS's estimator of the click-through model: an embedding column per field (AdaGrad rows, ids admitted
    after ``min_count`` sightings), the numbers beside them, dense layers of ``hidden`` on Adam, 2 classes;
    ``params`` are the estimator's other Params."""
    from sparkps.ml import Dl4jEstimator, EmbeddingColumn
    from sparkps.ml.networks import preset

    columns = [EmbeddingColumn(c, dim, optimizer="ADAGRAD", learningRate=table_lr, minCount=min_count)
               for c in data.categoricalColumns()]
    network = preset("mlp:" + hidden, inputs=len(columns) * dim + len(data.numericColumns()), classes=2, seed=seed,
                     learningRate=lr)
    return Dl4jEstimator(embeddingColumns=columns, numericCols=data.numericColumns(), networkJson=network, seed=seed,
                         **params)


def prepare(rows: int, min_count: int, scale: float = SCALE, signal_ids: int = SIGNAL_IDS) -> str:
    """Writes (once) the training rows 0 to ``rows`` and the held-out rows as records, of a generator of ``scale``
    and ``signal_ids`` (the benchmarks' by default; the command line's ``generate click-through`` has 2,000 signal
    ids); returns their folder."""
    out = folder(rows, min_count, scale, signal_ids)
    if os.path.exists(os.path.join(out, "meta.json")):
        return out
    import sparkps
    from pyspark.sql import functions as F
    from sparkps.datasets import ClickThroughData

    spark = sparkps.local_session("local[2]", "peers-ctr-data", {
        "spark.ui.enabled": "false", "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.driver.memory": "6g"})
    spark.sparkContext.setLogLevel("ERROR")
    data = ClickThroughData(spark, scale=scale, signal_ids=signal_ids, seed=SEED)
    numeric, categorical = data.numericColumns(), data.categoricalColumns()

    def columns(frame):
        cols = [F.col("label").cast("float")]
        cols += [F.coalesce(F.log1p(F.col(c)), F.lit(0.0)).cast("float").alias(c) for c in numeric]
        # Ids are any 64-bit values, negative ones too: missing is a column of its own.
        cols += [F.coalesce(F.col(c), F.lit(0)).alias(c) for c in categorical]
        cols += [F.col(c).isNull().alias(c + "_missing") for c in categorical]
        return frame.select(*cols).toPandas()

    train = columns(data.rows(0, rows, 2))
    test = columns(data.rows(HELD_OUT_FIRST, HELD_OUT_ROWS, 2))
    planted = data.plantedAuc(data.rows(HELD_OUT_FIRST, HELD_OUT_ROWS, 2))
    spark.stop()

    os.makedirs(out, exist_ok=True)
    sizes, offset = [], 0
    encoded = {"train": np.zeros(len(train), RECORD), "test": np.zeros(len(test), RECORD)}
    for name, frame in (("train", train), ("test", test)):
        encoded[name]["label"] = frame["label"].to_numpy()
        encoded[name]["numbers"] = frame[numeric].to_numpy(np.float32)
    for f, c in enumerate(categorical):
        ids = train[c].to_numpy(np.int64)
        seen, counts = np.unique(ids[~train[c + "_missing"].to_numpy()], return_counts=True)
        kept = seen[counts >= min_count]  # row 0: missing, row 1: rare or unseen, then one per kept id
        for name, frame in (("train", train), ("test", test)):
            encoded[name]["ids"][:, f] = table_rows(frame[c].to_numpy(np.int64), frame[c + "_missing"].to_numpy(),
                                                    kept, offset)
        sizes.append(2 + len(kept))
        offset += 2 + len(kept)
    for name, records in encoded.items():
        records.tofile(os.path.join(out, name + ".bin.part"))
        os.replace(os.path.join(out, name + ".bin.part"), os.path.join(out, name + ".bin"))
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump({"rows": rows, "held_out_rows": HELD_OUT_ROWS, "min_count": min_count, "scale": scale,
                   "signal_ids": signal_ids, "field_rows": sizes,
                   "table_rows": offset, "planted_auc": planted, "clicks": float(encoded["train"]["label"].sum())},
                  f, indent=1)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--min-count", type=int, default=20)
    parser.add_argument("--scale", type=float, default=SCALE)
    parser.add_argument("--signal-ids", type=int, default=SIGNAL_IDS)
    a = parser.parse_args()
    where = prepare(a.rows, a.min_count, a.scale, a.signal_ids)
    print(json.dumps(dict(meta(where), folder=where)))

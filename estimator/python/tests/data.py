"""Small data sets the Python tests train on, the same for a classic and a Spark Connect session."""

import random


def blobs(spark, n=3000, features=12, classes=3, seed=1):
    """``n`` rows of ``classes`` Gaussian blobs: class c raises every feature j with j % classes == c."""
    from pyspark.ml.linalg import Vectors

    rnd = random.Random(seed)
    rows = [(Vectors.dense([rnd.gauss(2.0 if j % classes == i % classes else 0.0, 1.0) for j in range(features)]),
             float(i % classes)) for i in range(n)]
    return spark.createDataFrame(rows, ["features", "label"])


def parquet_with_a_nan(spark, path, bad_row=57):
    """200 rows of 2 features in one Parquet file, row ``bad_row``'s first feature NaN; read back."""
    from pyspark.ml.linalg import Vectors

    rows = [(Vectors.dense([1.0 if i % 2 else -1.0, i / 200.0]), float(i % 2)) for i in range(200)]
    rows[bad_row] = (Vectors.dense([float("nan"), 0.0]), 1.0)
    spark.createDataFrame(rows, ["features", "label"]).coalesce(1).write.parquet(path)
    return spark.read.parquet(path)

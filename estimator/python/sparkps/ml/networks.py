"""Networks named in a word and sized to the data, as the command line's ``--network`` takes them."""

from sparkps.ml import _errors


def preset(spec: str, inputs: int, classes: int, seed: int = 0, learningRate: float = 1e-3) -> str:
    """The DL4J configuration (JSON, for ``Dl4jEstimator(networkJson=...)``) of a preset network:
    ``"mlp"`` (one hidden layer of 256), ``"mlp:512,256"`` (ReLU layers of those sizes) or ``"lenet"``
    (square single-channel images), with ``inputs`` features and ``classes`` classes, trained with Adam
    at ``learningRate``. A spec that is none of these raises ValueError naming it.
    """
    from pyspark.sql.utils import is_remote

    if is_remote():
        raise RuntimeError("sparkps.ml.networks.preset needs a classic session's JVM; on Spark Connect give the "
                           "estimator the preset itself, Dl4jEstimator(network=%r): the server sizes it to the data"
                           % spec)
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    if sc is None:
        raise RuntimeError("sparkps.ml.networks.preset needs a SparkSession: the JVM builds the network "
                           "(sparkps.local_session() starts one)")
    with _errors.translated():
        return sc._jvm.io.sparkps.ml.NetworkPresets.json(spec, int(inputs), int(classes), int(seed),
                                                         float(learningRate))

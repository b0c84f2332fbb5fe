# Generated from the Java classes io.sparkps.ml.Dl4jEstimator and io.sparkps.ml.Dl4jModel by the
# estimator's PythonParamsTest: do not edit. Regenerate with
#   mvn -pl estimator test -Dtest=PythonParamsTest -Dsparkps.writePython=true
"""The Params of the SparkPS estimator and model, as the Java classes declare them."""

from typing import List, Optional

from pyspark import keyword_only
from pyspark.ml.param import Param, Params, TypeConverters


class _Dl4jEstimatorParams(Params):
    """The Params of the Dl4jEstimator, their defaults, getters and setters."""

    asyncTables = Param(Params._dummy(), "asyncTables", "with embeddingColumns: the tables apply each worker's row gradients at once (ASYNC), whatever the dense part's consistency",
        typeConverter=TypeConverters.toBoolean)
    batchSize = Param(Params._dummy(), "batchSize", "examples per minibatch and worker (>= 1)",
        typeConverter=TypeConverters.toInt)
    bf16Transfers = Param(Params._dummy(), "bf16Transfers", "whether gradients and parameters travel as bfloat16 between executors (half the bytes; the ps keeps float32)",
        typeConverter=TypeConverters.toBoolean)
    checkpointDir = Param(Params._dummy(), "checkpointDir", "Hadoop path where training saves checkpoints and resumes from the latest one (unset: a directory of the fit's own that every executor shares, deleted when the fit ends; 'none': no checkpoints)",
        typeConverter=TypeConverters.toString)
    checkpointInterval = Param(Params._dummy(), "checkpointInterval", "steps between checkpoints (>= 1), or 0 for automatic: spaced so that saving takes at most 1% of the chief's time",
        typeConverter=TypeConverters.toInt)
    checkpointsKept = Param(Params._dummy(), "checkpointsKept", "checkpoints kept, the newest (>= 1)",
        typeConverter=TypeConverters.toInt)
    consistency = Param(Params._dummy(), "consistency", "ASYNC, SYNC or SSP",
        typeConverter=TypeConverters.toString)
    embeddingColumns = Param(Params._dummy(), "embeddingColumns", "categorical columns as embedding tables on the ps, as a JSON list of {column, dim, buckets, optimizer, learningRate, pooling, minCount, evictAfterSteps, maxRowsPerShard, initScale} (EmbeddingColumn.toJson); [] (the default): the network reads featuresCol",
        typeConverter=TypeConverters.toString)
    epochs = Param(Params._dummy(), "epochs", "passes over the data (>= 1; unused when maxSteps is set)",
        typeConverter=TypeConverters.toInt)
    evalDeferred = Param(Params._dummy(), "evalDeferred", "whether the evaluator only copies the variables while training runs and scores the copies after it (no cores taken from training)",
        typeConverter=TypeConverters.toBoolean)
    evalEverySeconds = Param(Params._dummy(), "evalEverySeconds", "seconds between evaluations at the least (> 0)",
        typeConverter=TypeConverters.toFloat)
    factorizationTerm = Param(Params._dummy(), "factorizationTerm", "with embeddingColumns: whether the network's last input is the sum of the pairwise dot products of the pooled embeddings (as DeepFM's factorization machine; the columns then need one dim)",
        typeConverter=TypeConverters.toBoolean)
    featuresCol = Param(Params._dummy(), "featuresCol", "features column name",
        typeConverter=TypeConverters.toString)
    gradientAccumulation = Param(Params._dummy(), "gradientAccumulation", "minibatches whose mean gradient a worker pushes as one step, all computed from one pull (>= 1; 1: every minibatch is a step)",
        typeConverter=TypeConverters.toInt)
    labelCol = Param(Params._dummy(), "labelCol", "label column name (class index or one-hot vector for classifiers, number or vector for regressors)",
        typeConverter=TypeConverters.toString)
    maxSteps = Param(Params._dummy(), "maxSteps", "steps per worker in all (>= 1), instead of epochs; 0 to run epochs",
        typeConverter=TypeConverters.toInt)
    mlflowExperimentName = Param(Params._dummy(), "mlflowExperimentName", "the MLflow experiment of a tracked fit, created when missing (empty: MLFLOW_EXPERIMENT_NAME, else Default)",
        typeConverter=TypeConverters.toString)
    mlflowRunId = Param(Params._dummy(), "mlflowRunId", "an MLflow run that exists, which a fit logs into and leaves to its owner to end (empty: MLFLOW_RUN_ID, else a run of its own; Python sets it to the active run)",
        typeConverter=TypeConverters.toString)
    mlflowRunName = Param(Params._dummy(), "mlflowRunName", "the name of a tracked fit's MLflow run (empty: MLflow names it)",
        typeConverter=TypeConverters.toString)
    mlflowTags = Param(Params._dummy(), "mlflowTags", "tags of a tracked fit's MLflow run, each key=value",
        typeConverter=TypeConverters.toListString)
    mlflowTrackingUri = Param(Params._dummy(), "mlflowTrackingUri", "the MLflow tracking server a fit logs its params, metrics and end to, http(s)://host:port (empty: MLFLOW_TRACKING_URI, and no tracking when that is unset)",
        typeConverter=TypeConverters.toString)
    network = Param(Params._dummy(), "network", "a preset network sized to the data when fitting, used when networkJson is not set: mlp (one hidden layer of 256), mlp:H1,H2,... (ReLU layers of those sizes) or lenet (square single-channel images), Adam at 0.001, softmax over the label's classes; or keras:PATH, a compiled tf.keras model saved as .h5 (on any Hadoop file system the driver reads)",
        typeConverter=TypeConverters.toString)
    networkJson = Param(Params._dummy(), "networkJson", "the DL4J MultiLayerConfiguration or ComputationGraphConfiguration as JSON, or a compiled tf.keras (Keras 2) model's JSON with its compile settings under training_config, imported through DL4J's Keras import when fitting",
        typeConverter=TypeConverters.toString)
    numPs = Param(Params._dummy(), "numPs", "parameter servers (>= 1)",
        typeConverter=TypeConverters.toInt)
    numWorkers = Param(Params._dummy(), "numWorkers", "workers, the chief included (>= 1)",
        typeConverter=TypeConverters.toInt)
    numericCols = Param(Params._dummy(), "numericCols", "with embeddingColumns: the numeric columns the network reads after the pooled embeddings (null reads 0)",
        typeConverter=TypeConverters.toListString)
    numericTransform = Param(Params._dummy(), "numericTransform", "with embeddingColumns: how the network reads numericCols: NONE (as they are) or LOG1P (sign(x) ln(1 + |x|), for count-like columns as click logs have), the same in training, evaluation and scoring",
        typeConverter=TypeConverters.toString)
    predictionCol = Param(Params._dummy(), "predictionCol", "prediction column name",
        typeConverter=TypeConverters.toString)
    probabilityCol = Param(Params._dummy(), "probabilityCol", "class probabilities column name",
        typeConverter=TypeConverters.toString)
    rawPredictionCol = Param(Params._dummy(), "rawPredictionCol", "raw output (before the output activation) column name",
        typeConverter=TypeConverters.toString)
    seed = Param(Params._dummy(), "seed", "seed of the minibatch shuffles",
        typeConverter=TypeConverters.toInt)
    sparseDensity = Param(Params._dummy(), "sparseDensity", "ASYNC and SSP: the fraction of each large variable's elements a worker's push and pull send, those that changed most, the rest kept for later (0: dense)",
        typeConverter=TypeConverters.toFloat)
    staleness = Param(Params._dummy(), "staleness", "SSP staleness bound (>= 0)",
        typeConverter=TypeConverters.toInt)
    stalenessAwareRate = Param(Params._dummy(), "stalenessAwareRate", "ASYNC and SSP: whether each gradient is applied at the learning rate divided by 1 + its staleness (the updates other workers made since it was computed)",
        typeConverter=TypeConverters.toBoolean)
    tensorboardHistogramSteps = Param(Params._dummy(), "tensorboardHistogramSteps", "with tensorboardLogDir, the chief's steps between histograms of the network's variables, read from the parameter servers (0: none)",
        typeConverter=TypeConverters.toInt)
    tensorboardLogDir = Param(Params._dummy(), "tensorboardLogDir", "a Hadoop path where a fit writes TensorBoard event files, in a subdirectory named by its SparkPS run id (empty: none)",
        typeConverter=TypeConverters.toString)
    widePart = Param(Params._dummy(), "widePart", "with embeddingColumns: whether each column also has a 1-dimensional embedding (a weight per id, as Wide & Deep's wide part), read after the numeric columns, one input per column",
        typeConverter=TypeConverters.toBoolean)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(
            asyncTables=False,
            batchSize=64,
            bf16Transfers=False,
            checkpointInterval=0,
            checkpointsKept=3,
            consistency="SYNC",
            embeddingColumns="[]",
            epochs=1,
            evalDeferred=False,
            evalEverySeconds=1.0,
            factorizationTerm=False,
            featuresCol="features",
            gradientAccumulation=1,
            labelCol="label",
            maxSteps=0,
            mlflowExperimentName="",
            mlflowRunId="",
            mlflowRunName="",
            mlflowTags=[],
            mlflowTrackingUri="",
            numPs=1,
            numWorkers=2,
            numericCols=[],
            numericTransform="NONE",
            predictionCol="prediction",
            probabilityCol="probability",
            rawPredictionCol="rawPrediction",
            seed=0,
            sparseDensity=0.0,
            staleness=2,
            stalenessAwareRate=False,
            tensorboardHistogramSteps=100,
            tensorboardLogDir="",
            widePart=False,
        )

    @keyword_only
    def setParams(
        self,
        *,
        asyncTables: Optional[bool] = None,
        batchSize: Optional[int] = None,
        bf16Transfers: Optional[bool] = None,
        checkpointDir: Optional[str] = None,
        checkpointInterval: Optional[int] = None,
        checkpointsKept: Optional[int] = None,
        consistency: Optional[str] = None,
        embeddingColumns: Optional[str] = None,
        epochs: Optional[int] = None,
        evalDeferred: Optional[bool] = None,
        evalEverySeconds: Optional[float] = None,
        factorizationTerm: Optional[bool] = None,
        featuresCol: Optional[str] = None,
        gradientAccumulation: Optional[int] = None,
        labelCol: Optional[str] = None,
        maxSteps: Optional[int] = None,
        mlflowExperimentName: Optional[str] = None,
        mlflowRunId: Optional[str] = None,
        mlflowRunName: Optional[str] = None,
        mlflowTags: Optional[List[str]] = None,
        mlflowTrackingUri: Optional[str] = None,
        network: Optional[str] = None,
        networkJson: Optional[str] = None,
        numPs: Optional[int] = None,
        numWorkers: Optional[int] = None,
        numericCols: Optional[List[str]] = None,
        numericTransform: Optional[str] = None,
        predictionCol: Optional[str] = None,
        probabilityCol: Optional[str] = None,
        rawPredictionCol: Optional[str] = None,
        seed: Optional[int] = None,
        sparseDensity: Optional[float] = None,
        staleness: Optional[int] = None,
        stalenessAwareRate: Optional[bool] = None,
        tensorboardHistogramSteps: Optional[int] = None,
        tensorboardLogDir: Optional[str] = None,
        widePart: Optional[bool] = None,
    ):
        """Sets the Params given by name (keywords only)."""
        return self._set(**self._input_kwargs)

    def getAsyncTables(self) -> bool:
        """Gets asyncTables: with embeddingColumns: the tables apply each worker's row gradients at once (ASYNC), whatever the dense part's consistency."""
        return self.getOrDefault(self.asyncTables)

    def setAsyncTables(self, value: bool):
        """Sets asyncTables."""
        return self._set(asyncTables=value)

    def getBatchSize(self) -> int:
        """Gets batchSize: examples per minibatch and worker (>= 1)."""
        return self.getOrDefault(self.batchSize)

    def setBatchSize(self, value: int):
        """Sets batchSize."""
        return self._set(batchSize=value)

    def getBf16Transfers(self) -> bool:
        """Gets bf16Transfers: whether gradients and parameters travel as bfloat16 between executors (half the bytes; the ps keeps float32)."""
        return self.getOrDefault(self.bf16Transfers)

    def setBf16Transfers(self, value: bool):
        """Sets bf16Transfers."""
        return self._set(bf16Transfers=value)

    def getCheckpointDir(self) -> str:
        """Gets checkpointDir: Hadoop path where training saves checkpoints and resumes from the latest one (unset: a directory of the fit's own that every executor shares, deleted when the fit ends; 'none': no checkpoints)."""
        return self.getOrDefault(self.checkpointDir)

    def setCheckpointDir(self, value: str):
        """Sets checkpointDir."""
        return self._set(checkpointDir=value)

    def getCheckpointInterval(self) -> int:
        """Gets checkpointInterval: steps between checkpoints (>= 1), or 0 for automatic: spaced so that saving takes at most 1% of the chief's time."""
        return self.getOrDefault(self.checkpointInterval)

    def setCheckpointInterval(self, value: int):
        """Sets checkpointInterval."""
        return self._set(checkpointInterval=value)

    def getCheckpointsKept(self) -> int:
        """Gets checkpointsKept: checkpoints kept, the newest (>= 1)."""
        return self.getOrDefault(self.checkpointsKept)

    def setCheckpointsKept(self, value: int):
        """Sets checkpointsKept."""
        return self._set(checkpointsKept=value)

    def getConsistency(self) -> str:
        """Gets consistency: ASYNC, SYNC or SSP."""
        return self.getOrDefault(self.consistency)

    def setConsistency(self, value: str):
        """Sets consistency."""
        return self._set(consistency=value)

    def getEmbeddingColumns(self) -> str:
        """Gets embeddingColumns: categorical columns as embedding tables on the ps, as a JSON list of {column, dim, buckets, optimizer, learningRate, pooling, minCount, evictAfterSteps, maxRowsPerShard, initScale} (EmbeddingColumn.toJson); [] (the default): the network reads featuresCol."""
        return self.getOrDefault(self.embeddingColumns)

    def setEmbeddingColumns(self, value: str):
        """Sets embeddingColumns."""
        return self._set(embeddingColumns=value)

    def getEpochs(self) -> int:
        """Gets epochs: passes over the data (>= 1; unused when maxSteps is set)."""
        return self.getOrDefault(self.epochs)

    def setEpochs(self, value: int):
        """Sets epochs."""
        return self._set(epochs=value)

    def getEvalDeferred(self) -> bool:
        """Gets evalDeferred: whether the evaluator only copies the variables while training runs and scores the copies after it (no cores taken from training)."""
        return self.getOrDefault(self.evalDeferred)

    def setEvalDeferred(self, value: bool):
        """Sets evalDeferred."""
        return self._set(evalDeferred=value)

    def getEvalEverySeconds(self) -> float:
        """Gets evalEverySeconds: seconds between evaluations at the least (> 0)."""
        return self.getOrDefault(self.evalEverySeconds)

    def setEvalEverySeconds(self, value: float):
        """Sets evalEverySeconds."""
        return self._set(evalEverySeconds=value)

    def getFactorizationTerm(self) -> bool:
        """Gets factorizationTerm: with embeddingColumns: whether the network's last input is the sum of the pairwise dot products of the pooled embeddings (as DeepFM's factorization machine; the columns then need one dim)."""
        return self.getOrDefault(self.factorizationTerm)

    def setFactorizationTerm(self, value: bool):
        """Sets factorizationTerm."""
        return self._set(factorizationTerm=value)

    def getFeaturesCol(self) -> str:
        """Gets featuresCol: features column name."""
        return self.getOrDefault(self.featuresCol)

    def setFeaturesCol(self, value: str):
        """Sets featuresCol."""
        return self._set(featuresCol=value)

    def getGradientAccumulation(self) -> int:
        """Gets gradientAccumulation: minibatches whose mean gradient a worker pushes as one step, all computed from one pull (>= 1; 1: every minibatch is a step)."""
        return self.getOrDefault(self.gradientAccumulation)

    def setGradientAccumulation(self, value: int):
        """Sets gradientAccumulation."""
        return self._set(gradientAccumulation=value)

    def getLabelCol(self) -> str:
        """Gets labelCol: label column name (class index or one-hot vector for classifiers, number or vector for regressors)."""
        return self.getOrDefault(self.labelCol)

    def setLabelCol(self, value: str):
        """Sets labelCol."""
        return self._set(labelCol=value)

    def getMaxSteps(self) -> int:
        """Gets maxSteps: steps per worker in all (>= 1), instead of epochs; 0 to run epochs."""
        return self.getOrDefault(self.maxSteps)

    def setMaxSteps(self, value: int):
        """Sets maxSteps."""
        return self._set(maxSteps=value)

    def getMlflowExperimentName(self) -> str:
        """Gets mlflowExperimentName: the MLflow experiment of a tracked fit, created when missing (empty: MLFLOW_EXPERIMENT_NAME, else Default)."""
        return self.getOrDefault(self.mlflowExperimentName)

    def setMlflowExperimentName(self, value: str):
        """Sets mlflowExperimentName."""
        return self._set(mlflowExperimentName=value)

    def getMlflowRunId(self) -> str:
        """Gets mlflowRunId: an MLflow run that exists, which a fit logs into and leaves to its owner to end (empty: MLFLOW_RUN_ID, else a run of its own; Python sets it to the active run)."""
        return self.getOrDefault(self.mlflowRunId)

    def setMlflowRunId(self, value: str):
        """Sets mlflowRunId."""
        return self._set(mlflowRunId=value)

    def getMlflowRunName(self) -> str:
        """Gets mlflowRunName: the name of a tracked fit's MLflow run (empty: MLflow names it)."""
        return self.getOrDefault(self.mlflowRunName)

    def setMlflowRunName(self, value: str):
        """Sets mlflowRunName."""
        return self._set(mlflowRunName=value)

    def getMlflowTags(self) -> List[str]:
        """Gets mlflowTags: tags of a tracked fit's MLflow run, each key=value."""
        return self.getOrDefault(self.mlflowTags)

    def setMlflowTags(self, value: List[str]):
        """Sets mlflowTags."""
        return self._set(mlflowTags=value)

    def getMlflowTrackingUri(self) -> str:
        """Gets mlflowTrackingUri: the MLflow tracking server a fit logs its params, metrics and end to, http(s)://host:port (empty: MLFLOW_TRACKING_URI, and no tracking when that is unset)."""
        return self.getOrDefault(self.mlflowTrackingUri)

    def setMlflowTrackingUri(self, value: str):
        """Sets mlflowTrackingUri."""
        return self._set(mlflowTrackingUri=value)

    def getNetwork(self) -> str:
        """Gets network: a preset network sized to the data when fitting, used when networkJson is not set: mlp (one hidden layer of 256), mlp:H1,H2,... (ReLU layers of those sizes) or lenet (square single-channel images), Adam at 0.001, softmax over the label's classes; or keras:PATH, a compiled tf.keras model saved as .h5 (on any Hadoop file system the driver reads)."""
        return self.getOrDefault(self.network)

    def setNetwork(self, value: str):
        """Sets network."""
        return self._set(network=value)

    def getNetworkJson(self) -> str:
        """Gets networkJson: the DL4J MultiLayerConfiguration or ComputationGraphConfiguration as JSON, or a compiled tf.keras (Keras 2) model's JSON with its compile settings under training_config, imported through DL4J's Keras import when fitting."""
        return self.getOrDefault(self.networkJson)

    def setNetworkJson(self, value: str):
        """Sets networkJson."""
        return self._set(networkJson=value)

    def getNumPs(self) -> int:
        """Gets numPs: parameter servers (>= 1)."""
        return self.getOrDefault(self.numPs)

    def setNumPs(self, value: int):
        """Sets numPs."""
        return self._set(numPs=value)

    def getNumWorkers(self) -> int:
        """Gets numWorkers: workers, the chief included (>= 1)."""
        return self.getOrDefault(self.numWorkers)

    def setNumWorkers(self, value: int):
        """Sets numWorkers."""
        return self._set(numWorkers=value)

    def getNumericCols(self) -> List[str]:
        """Gets numericCols: with embeddingColumns: the numeric columns the network reads after the pooled embeddings (null reads 0)."""
        return self.getOrDefault(self.numericCols)

    def setNumericCols(self, value: List[str]):
        """Sets numericCols."""
        return self._set(numericCols=value)

    def getNumericTransform(self) -> str:
        """Gets numericTransform: with embeddingColumns: how the network reads numericCols: NONE (as they are) or LOG1P (sign(x) ln(1 + |x|), for count-like columns as click logs have), the same in training, evaluation and scoring."""
        return self.getOrDefault(self.numericTransform)

    def setNumericTransform(self, value: str):
        """Sets numericTransform."""
        return self._set(numericTransform=value)

    def getPredictionCol(self) -> str:
        """Gets predictionCol: prediction column name."""
        return self.getOrDefault(self.predictionCol)

    def setPredictionCol(self, value: str):
        """Sets predictionCol."""
        return self._set(predictionCol=value)

    def getProbabilityCol(self) -> str:
        """Gets probabilityCol: class probabilities column name."""
        return self.getOrDefault(self.probabilityCol)

    def setProbabilityCol(self, value: str):
        """Sets probabilityCol."""
        return self._set(probabilityCol=value)

    def getRawPredictionCol(self) -> str:
        """Gets rawPredictionCol: raw output (before the output activation) column name."""
        return self.getOrDefault(self.rawPredictionCol)

    def setRawPredictionCol(self, value: str):
        """Sets rawPredictionCol."""
        return self._set(rawPredictionCol=value)

    def getSeed(self) -> int:
        """Gets seed: seed of the minibatch shuffles."""
        return self.getOrDefault(self.seed)

    def setSeed(self, value: int):
        """Sets seed."""
        return self._set(seed=value)

    def getSparseDensity(self) -> float:
        """Gets sparseDensity: ASYNC and SSP: the fraction of each large variable's elements a worker's push and pull send, those that changed most, the rest kept for later (0: dense)."""
        return self.getOrDefault(self.sparseDensity)

    def setSparseDensity(self, value: float):
        """Sets sparseDensity."""
        return self._set(sparseDensity=value)

    def getStaleness(self) -> int:
        """Gets staleness: SSP staleness bound (>= 0)."""
        return self.getOrDefault(self.staleness)

    def setStaleness(self, value: int):
        """Sets staleness."""
        return self._set(staleness=value)

    def getStalenessAwareRate(self) -> bool:
        """Gets stalenessAwareRate: ASYNC and SSP: whether each gradient is applied at the learning rate divided by 1 + its staleness (the updates other workers made since it was computed)."""
        return self.getOrDefault(self.stalenessAwareRate)

    def setStalenessAwareRate(self, value: bool):
        """Sets stalenessAwareRate."""
        return self._set(stalenessAwareRate=value)

    def getTensorboardHistogramSteps(self) -> int:
        """Gets tensorboardHistogramSteps: with tensorboardLogDir, the chief's steps between histograms of the network's variables, read from the parameter servers (0: none)."""
        return self.getOrDefault(self.tensorboardHistogramSteps)

    def setTensorboardHistogramSteps(self, value: int):
        """Sets tensorboardHistogramSteps."""
        return self._set(tensorboardHistogramSteps=value)

    def getTensorboardLogDir(self) -> str:
        """Gets tensorboardLogDir: a Hadoop path where a fit writes TensorBoard event files, in a subdirectory named by its SparkPS run id (empty: none)."""
        return self.getOrDefault(self.tensorboardLogDir)

    def setTensorboardLogDir(self, value: str):
        """Sets tensorboardLogDir."""
        return self._set(tensorboardLogDir=value)

    def getWidePart(self) -> bool:
        """Gets widePart: with embeddingColumns: whether each column also has a 1-dimensional embedding (a weight per id, as Wide & Deep's wide part), read after the numeric columns, one input per column."""
        return self.getOrDefault(self.widePart)

    def setWidePart(self, value: bool):
        """Sets widePart."""
        return self._set(widePart=value)


class _Dl4jModelParams(Params):
    """The Params of the Dl4jModel, their defaults, getters and setters."""

    featuresCol = Param(Params._dummy(), "featuresCol", "features column name",
        typeConverter=TypeConverters.toString)
    predictionCol = Param(Params._dummy(), "predictionCol", "prediction column name",
        typeConverter=TypeConverters.toString)
    probabilityCol = Param(Params._dummy(), "probabilityCol", "class probabilities column name",
        typeConverter=TypeConverters.toString)
    rawPredictionCol = Param(Params._dummy(), "rawPredictionCol", "raw output (before the output activation) column name",
        typeConverter=TypeConverters.toString)
    tablesScoring = Param(Params._dummy(), "tablesScoring", "how an embedding model reads its tables to score: load (each executor loads them), join (joins the rows' ids with them, for tables larger than an executor) or auto (join when the tables' files exceed a quarter of an executor's heap)",
        typeConverter=TypeConverters.toString)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(
            featuresCol="features",
            predictionCol="prediction",
            probabilityCol="probability",
            rawPredictionCol="rawPrediction",
            tablesScoring="auto",
        )

    @keyword_only
    def setParams(
        self,
        *,
        featuresCol: Optional[str] = None,
        predictionCol: Optional[str] = None,
        probabilityCol: Optional[str] = None,
        rawPredictionCol: Optional[str] = None,
        tablesScoring: Optional[str] = None,
    ):
        """Sets the Params given by name (keywords only)."""
        return self._set(**self._input_kwargs)

    def getFeaturesCol(self) -> str:
        """Gets featuresCol: features column name."""
        return self.getOrDefault(self.featuresCol)

    def setFeaturesCol(self, value: str):
        """Sets featuresCol."""
        return self._set(featuresCol=value)

    def getPredictionCol(self) -> str:
        """Gets predictionCol: prediction column name."""
        return self.getOrDefault(self.predictionCol)

    def setPredictionCol(self, value: str):
        """Sets predictionCol."""
        return self._set(predictionCol=value)

    def getProbabilityCol(self) -> str:
        """Gets probabilityCol: class probabilities column name."""
        return self.getOrDefault(self.probabilityCol)

    def setProbabilityCol(self, value: str):
        """Sets probabilityCol."""
        return self._set(probabilityCol=value)

    def getRawPredictionCol(self) -> str:
        """Gets rawPredictionCol: raw output (before the output activation) column name."""
        return self.getOrDefault(self.rawPredictionCol)

    def setRawPredictionCol(self, value: str):
        """Sets rawPredictionCol."""
        return self._set(rawPredictionCol=value)

    def getTablesScoring(self) -> str:
        """Gets tablesScoring: how an embedding model reads its tables to score: load (each executor loads them), join (joins the rows' ids with them, for tables larger than an executor) or auto (join when the tables' files exceed a quarter of an executor's heap)."""
        return self.getOrDefault(self.tablesScoring)

    def setTablesScoring(self, value: str):
        """Sets tablesScoring."""
        return self._set(tablesScoring=value)

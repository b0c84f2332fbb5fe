"""The SparkPS estimator and model as PySpark ML stages over the JVM's io.sparkps.ml classes."""

import difflib
import json
import sys
from typing import Any, Dict, List, Optional, Union

from pyspark.ml.util import JavaMLReadable, JavaMLReader, JavaMLWritable
from pyspark.ml.wrapper import JavaEstimator, JavaModel
from pyspark.sql.utils import is_remote

from sparkps.ml import _connect, _errors, _jobs, _tracking, keras
from sparkps.ml._params import _Dl4jEstimatorParams, _Dl4jModelParams
from sparkps.ml.embedding import EmbeddingColumn


def _jvm() -> Any:
    """The JVM of the classic session, or None (Spark Connect clients have none, nor Py4J)."""
    from pyspark import SparkContext

    sc = SparkContext._active_spark_context
    return None if sc is None else sc._jvm


class _Reader(JavaMLReader):
    """Loads through the Java class the Python class names (PySpark's reader derives it from pyspark.*)."""

    @classmethod
    def _java_loader_class(cls, clazz: type) -> str:
        return clazz._java_class


def _reader(cls: type):
    """The reader of a stage class: through Py4J on a classic session, Spark Connect's ML read otherwise."""
    if not is_remote():
        return _Reader(cls)
    from pyspark.ml.connect.readwrite import RemoteMLReader

    # Connect's reader names the Java class after the Python class's module (pyspark.* -> org.apache.spark.*)
    # and imports the Python class back by that name: a subclass in module io.sparkps.ml does both, and
    # the import finds the real class (see _alias_java_packages).
    return _connect.translating_reader(RemoteMLReader(type(cls.__name__, (cls,), {"__module__": "io.sparkps.ml"})))


class _JvmParams:
    """Params checked by the JVM as they are set: a value the Java Param refuses raises ValueError naming
    the Param there and then, before any Spark job (the type is PySpark's TypeConverter's to check)."""

    _java_class = ""

    def _set(self, **kwargs: Any):
        unknown = [name for name in kwargs if not self.hasParam(name)]
        if unknown:
            names = [p.name for p in self.params]
            hints = ["%s (did you mean %s?)" % (u, " or ".join(difflib.get_close_matches(u, names, 2)))
                     if difflib.get_close_matches(u, names, 2) else u for u in unknown]
            raise TypeError("%s has no Param %s; its Params are %s"
                            % (type(self).__name__, ", ".join(hints), ", ".join(sorted(names))))
        if "embeddingColumns" in kwargs and not isinstance(kwargs["embeddingColumns"], (str, type(None))):
            kwargs["embeddingColumns"] = EmbeddingColumn.to_json(kwargs["embeddingColumns"])
        for name in ("network", "networkJson"):
            if name in kwargs and keras.is_keras_model(kwargs[name]):  # a Keras model travels as its JSON
                kwargs["networkJson"] = keras.model_json(kwargs.pop(name))
        super()._set(**kwargs)
        java = getattr(self, "_java_obj", None)
        # On Spark Connect the server checks the values (its Params are the Java ones).
        if java is not None and not isinstance(java, str) and not is_remote() and _jvm() is not None:
            for name in kwargs:
                self._check_with_java(java, self.getParam(name))
        return self

    def _check_with_java(self, java: Any, param: Any) -> None:
        value = self._paramMap.get(param)
        if value is None or not java.hasParam(param.name):
            return
        try:
            with _errors.translated():
                self._make_java_param_pair(param, value)  # Spark's ParamPair runs the Java Param's validator
        except (ValueError, RuntimeError):
            raise ValueError("%s=%r is not valid: %s" % (param.name, value, param.doc)) from None
        if param.name == "networkJson" or (param.name == "network" and value.startswith("keras:")):
            # A Keras model is imported now, so that a layer DL4J cannot take is named before any Spark job.
            importer = _jvm().io.sparkps.ml.KerasNetworks
            if param.name == "network" or importer.isKeras(value):
                try:
                    with _errors.translated():
                        if param.name == "network":
                            importer.fromFileSpec(value, _jvm().org.apache.spark.SparkContext.getOrCreate()
                                                  .hadoopConfiguration())
                        else:
                            importer.toDl4jJson(value)
                except ValueError as e:
                    raise ValueError("%s: %s" % (param.name, e)) from None
        if param.name == "embeddingColumns":
            try:
                with _errors.translated():
                    _jvm().io.sparkps.ml.param.EmbeddingColumn.fromJson(value)
            except ValueError as e:
                raise ValueError("embeddingColumns=%r is not valid: %s" % (value, e)) from None


class Dl4jEstimator(_JvmParams, JavaEstimator, _Dl4jEstimatorParams, JavaMLReadable, JavaMLWritable):
    """Trains a Deeplearning4j network on a DataFrame with SparkPS's parameter servers (``io.sparkps.ml.Dl4jEstimator``).

    Every Param of the Java class is here under its name, as a keyword argument and as ``setX``/``getX``::

        estimator = Dl4jEstimator(networkJson=conf_json, numWorkers=2, numPs=1, epochs=2)
        model = estimator.fit(train_df)                # progress shown as it trains
        job = estimator.fitAsync(train_df)             # returns at once: a Future of the model
    """

    _java_class = "io.sparkps.ml.Dl4jEstimator"

    def __init__(self, **params: Any):
        super().__init__()
        self._java_obj = self._new_java_obj(self._java_class, self.uid)
        self._evaluation = None
        self._set(**params)  # (not setParams: an unknown name gets this class's message, with the names near it)

    def setEmbeddingColumns(self, value: Union[str, List[EmbeddingColumn]]) -> "Dl4jEstimator":
        """Sets embeddingColumns: a list of :class:`EmbeddingColumn` or their JSON."""
        return self._set(embeddingColumns=value)

    def setEvaluationData(self, evaluation) -> "Dl4jEstimator":
        """Held-out rows (the training data's columns) the evaluator scores as each fit advances; None for none."""
        self._evaluation = evaluation
        return self

    def fitAsync(self, dataset, evaluation=None, progress: Optional[bool] = None) -> _jobs.FitJob:
        """Starts training and returns at once: a :class:`FitJob`, the future of the model.

        ``evaluation`` (a held-out DataFrame) is scored as training advances; ``progress`` shows the run's
        progress (default: ``sparkps.ml.show_progress``).
        """
        evaluation = evaluation if evaluation is not None else self._evaluation
        if is_remote():
            if evaluation is not None:
                raise ValueError("evaluation data is not supported on Spark Connect: score the model on the held-out "
                                 "rows once it is trained")
            return _connect.ConnectFitJob(self, dataset)
        target, log_after = self._in_active_run()
        target._transfer_params_to_java()
        jvm = _jvm()
        with _errors.translated():
            java_job = target._java_obj.fitAsync(dataset._jdf, None if evaluation is None else evaluation._jdf)
        show = sys.modules["sparkps.ml"].show_progress if progress is None else progress

        def to_model(java_model: Any) -> "Dl4jModel":
            model = self._copyValues(self._create_model(java_model))
            if log_after is not None:
                _tracking.log_trained(log_after[0], log_after[1], model, jvm)
            return model

        return _jobs.FitJob(jvm.io.sparkps.ml.python.PythonJob(java_job), to_model, _jobs.Display() if show else None)

    def _in_active_run(self):
        """The estimator a fit runs, and where Python logs it afterwards: inside an active MLflow run (say
        autolog's) and with no tracking set on this estimator, a tracking server's run is logged into live by
        the JVM (a copy with mlflowTrackingUri and mlflowRunId set), any other store's by Python once the model
        is trained (``sparkps.ml._tracking``)."""
        if self.isSet(self.mlflowTrackingUri) or self.isSet(self.mlflowRunId):
            return self, None
        run = _tracking.active_run()
        if run is None:
            return self, None
        uri, run_id = run
        if _tracking.is_server(uri):
            return self.copy({self.mlflowTrackingUri: uri, self.mlflowRunId: run_id}), None
        return self, run

    def _fit(self, dataset) -> "Dl4jModel":
        if is_remote():
            with _connect.translated():
                return JavaEstimator._fit(self, dataset)  # Spark Connect's ML fit command
        job = self.fitAsync(dataset)
        try:
            return job.result()
        except KeyboardInterrupt:
            job.cancel()
            raise

    def _create_model(self, java_model: Any) -> "Dl4jModel":
        return Dl4jModel(java_model)

    @classmethod
    def read(cls):
        return _reader(cls)

    def copy(self, extra: Optional[Dict] = None) -> "Dl4jEstimator":
        that = super().copy(extra)
        that._evaluation = self._evaluation
        return that


class Dl4jModel(_JvmParams, JavaModel, _Dl4jModelParams, JavaMLReadable, JavaMLWritable):
    """A network trained by :class:`Dl4jEstimator` (``io.sparkps.ml.Dl4jModel``): ``transform`` adds the
    prediction columns; ``summary()`` is the run's record (steps, losses, evaluations, recoveries)."""

    _java_class = "io.sparkps.ml.Dl4jModel"

    def __init__(self, java_model: Any = None):
        super().__init__(java_model)
        if java_model is not None and not is_remote():
            self._resetUid(java_model.uid())
            self._transfer_params_from_java()

    def summary(self) -> Dict[str, Any]:
        """The training run's summary (as ``summary.json``): status, steps, times, losses, evaluations, recoveries."""
        if is_remote():
            raise NotImplementedError(
                "Dl4jModel.summary() is not available on Spark Connect: a Connect server lets clients call only the "
                "model methods Spark lists for its own models. describe() gives the steps, last loss and last "
                "evaluation; for the whole record, save the model and read it on the server: "
                "spark.read.json(path + '/data/summary.json')")
        return json.loads(self._call_java("summary").toJson())

    def describe(self) -> Dict[str, Any]:
        """The model in brief, on a classic or a Connect session: ``classifier``, ``outputs``, ``parameters``,
        ``embeddings`` and, for a trained model, ``steps``, ``elapsedSeconds``, ``loss`` and the last evaluation's
        metrics. It is the Java model's ``toString``, the one method a Connect server lets a client call on it."""
        text = str(self._call_java("toString"))
        if text.endswith(", no network"):
            raise ValueError("%s holds no network: a model comes from Dl4jEstimator.fit or Dl4jModel.load" % self.uid)
        fields = {}
        for part in text.split(", ")[1:]:
            key, _, value = part.partition("=")
            fields[key] = value == "true" if value in ("true", "false") else _number(value)
        return fields

    def isClassifier(self) -> bool:
        """Whether the network is a classifier (by its output layer's loss); else a regressor."""
        return self.describe()["classifier"]

    def hasEmbeddings(self) -> bool:
        """Whether the model looks categorical columns up in embedding tables (saved beside it)."""
        return self.describe()["embeddings"]

    def _transform(self, dataset):
        if is_remote():
            with _connect.translated():
                return super()._transform(dataset)
        with _errors.translated():
            return super()._transform(dataset)

    @classmethod
    def read(cls):
        return _reader(cls)


def _number(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        return float(text)


def _alias_java_packages() -> None:
    """Lets PySpark's persistence find these classes by their Java names.

    PySpark maps a saved stage's Java class to a Python one by replacing ``org.apache.spark`` with
    ``pyspark`` and importing the result (Pipeline, CrossValidator and DefaultParamsReader all do), so
    ``io.sparkps.ml.Dl4jModel`` must import as a module path: these aliases make ``io.sparkps.ml`` name
    this package in ``sys.modules`` (the standard library's ``io`` is not touched).
    """
    this = sys.modules["sparkps.ml"]
    sys.modules.setdefault("io.sparkps", sys.modules["sparkps"])
    sys.modules.setdefault("io.sparkps.ml", this)

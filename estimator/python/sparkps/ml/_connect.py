"""The stages on a Spark Connect session: the server's errors raised as SparkPS names them, and a fit's future."""

import re
import threading
import uuid
from typing import Any, Dict, List

from sparkps.ml import _errors
from sparkps.ml._errors import TrainingFailure
from sparkps.ml._jobs import SettlingFuture

#: The Connect server's setting that bounds one model in its ML cache.
MAX_MODEL_SIZE = "spark.connect.session.connectML.mlCache.memoryControl.maxModelSize"


def _server_error(error: BaseException) -> bool:
    try:
        from pyspark.errors.exceptions.connect import SparkConnectException
    except ImportError:  # pragma: no cover - a classic-only PySpark
        return False
    return isinstance(error, SparkConnectException)


def _condition(error: BaseException) -> str:
    for getter in ("getCondition", "getErrorClass"):
        if hasattr(error, getter):
            try:
                return getattr(error, getter)() or ""
            except Exception:  # noqa: BLE001 - an exception without one
                return ""
    return ""


def _message(error: BaseException) -> str:
    message = getattr(error, "_message", None) or str(error)
    return message.split("\n\nJVM stacktrace:")[0].strip()


def convert(error: BaseException) -> BaseException:
    """The Python exception for an error a Connect server sent back about a SparkPS stage."""
    condition = _condition(error)
    message = _message(error)
    params: Dict[str, str] = {}
    if hasattr(error, "getMessageParameters"):
        params = error.getMessageParameters() or {}
    if condition == "CONNECT_ML.MODEL_SIZE_OVERFLOW_EXCEPTION" or "MODEL_SIZE_OVERFLOW_EXCEPTION" in message:
        sizes = re.findall(r"(\d+) bytes", message)
        model_size = params.get("modelSize") or (sizes[0] if sizes else "?")
        limit = params.get("modelMaxSize") or (sizes[1] if len(sizes) > 1 else "?")
        return RuntimeError("the trained model is about %s bytes, more than the Spark Connect server keeps for one "
                            "model (%s bytes): raise %s, for this session with spark.conf.set(...) or for the "
                            "server with --conf, or train a smaller network" % (model_size, limit, MAX_MODEL_SIZE))
    missing = re.search(r"Unsupported (?:ML operator, found|read for) (io\.sparkps\.ml\.\w+)", message)
    if missing:
        return RuntimeError("this Spark Connect server has no SparkPS (no ML operator %s): start it with the SparkPS "
                            "jar of its Scala version, sparkps-estimator_2.13-<version>-all.jar, on the driver's "
                            "class path and the executors': --driver-class-path <jar> --jars <jar> (Connect lists ML "
                            "operators through the driver's own class loader, which --jars alone does not reach)"
                            % missing.group(1))
    if "io.sparkps.spark.TrainingFailure" in message or "TrainingFailure" in (getattr(error, "_classes", None) or []):
        return _training_failure(_strip_class(message, "io.sparkps.spark.TrainingFailure"))
    invalid = re.search(r"parameter (\w+) given invalid value (.*)\.$", message)
    if invalid:
        from sparkps.ml._params import _Dl4jEstimatorParams, _Dl4jModelParams

        param = getattr(_Dl4jEstimatorParams, invalid.group(1), None) or getattr(_Dl4jModelParams, invalid.group(1), None)
        if param is not None:
            return ValueError("%s=%s is not valid: %s" % (param.name, invalid.group(2), param.doc))
    if type(error).__name__ == "IllegalArgumentException":
        return ValueError(_strip_class(message, "java.lang.IllegalArgumentException"))
    return error


#: How SparkPS names the task that failed, first in a TrainingFailure's message (FailureExplainer).
_FAILED_TASK = re.compile(r"\b(chief|worker|ps|evaluator) (\d+) on (\S+) \((?:stage|task) attempt (\d+)\) failed: ")


def _training_failure(message: str) -> TrainingFailure:
    """A TrainingFailure with the role, index, host and attempt its message names (the server sends no more)."""
    task = _FAILED_TASK.search(message)
    if task is None:
        return TrainingFailure(message)
    return TrainingFailure(message, task.group(1).upper(), int(task.group(2)), task.group(3), int(task.group(4)))


def _strip_class(message: str, java_class: str) -> str:
    return re.sub(r"^\[?[A-Z_.]*\]?\s*" + re.escape(java_class) + r":\s*", "", message)


#: Raises a Connect server's error about a SparkPS stage as its Python exception (see :func:`convert`).
translated = _errors.translating(_server_error, convert)


class _TranslatingReader:
    """A Connect ML reader whose errors come back as SparkPS names them."""

    def __init__(self, reader: Any):
        self._reader = reader

    def load(self, path: str) -> Any:
        with translated():
            return self._reader.load(path)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reader, name)


def translating_reader(reader: Any) -> _TranslatingReader:
    return _TranslatingReader(reader)


class ConnectFitJob(SettlingFuture):
    """A fit on a Spark Connect session, started at once: a ``concurrent.futures.Future`` of the model.

    The fit runs as one ML command under an operation tag of its own; ``cancel()`` interrupts it, and the
    server cancels the run. Connect carries no progress while a command runs: ``progress()`` is empty and
    ``status()`` says RUNNING until the model arrives.
    """

    def __init__(self, estimator: Any, dataset: Any):
        super().__init__()
        self._session = dataset.sparkSession
        self._tag = "sparkps-fit-" + uuid.uuid4().hex[:12]
        self._status = "RUNNING"
        self._thread = threading.Thread(target=self._run, args=(estimator, dataset), name=self._tag, daemon=True)
        self._thread.start()

    def _run(self, estimator: Any, dataset: Any) -> None:
        self._session.addTag(self._tag)  # (tags are the calling thread's)
        try:
            model = estimator.fit(dataset)
            self._status = "SUCCEEDED"
            self._settle(model, None)
        except BaseException as e:  # noqa: BLE001 - the future carries whatever the fit ended with
            self._status = "CANCELLED" if self.cancelled() else "FAILED"
            self._settle(None, e)
        finally:
            self._session.removeTag(self._tag)

    def status(self) -> str:
        return self._status

    def progress(self) -> List[Dict[str, Any]]:
        return []

    def cancel(self) -> bool:
        if self.done():
            return False
        cancelled = super().cancel()
        self._session.interruptTag(self._tag)
        self._status = "CANCELLED"
        return cancelled

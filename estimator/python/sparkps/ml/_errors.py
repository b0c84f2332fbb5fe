"""JVM failures raised as Python exceptions that carry SparkPS's own message, not a Py4J error."""

import concurrent.futures
import contextlib
import json
from typing import Any, Callable, Dict, Iterator, Optional


class JavaStackTrace(Exception):
    """The Java side of a failure: its stack trace as the JVM printed it (the cause of a SparkPS error)."""


class TrainingFailure(RuntimeError):
    """A SparkPS run failed: the message names the task that failed (role, index, host, stage attempt),
    the input at fault and the fix, as the JVM put it; the Java stack is this exception's cause.
    """

    def __init__(self, message: str, role: Optional[str] = None, index: int = -1, host: Optional[str] = None,
                 attempt: int = 0, remote_class: Optional[str] = None, java_failure: Any = None):
        super().__init__(message)
        self.role = role
        self.index = index
        self.host = host
        self.attempt = attempt
        self.remote_class = remote_class
        self._java_failure = java_failure

    def recreateLocally(self) -> Any:
        """Reruns the failed worker's function in the driver's JVM, against the same partition, so that a
        debugger attached to it stops at the fault (only for a worker's failure, in the driver that ran it).
        """
        if self._java_failure is None:
            raise RuntimeError("this failure cannot be recreated locally: it did not come from a training run")
        with translated():
            return self._java_failure.recreateLocally()


def _java_throwable(error: BaseException) -> Any:
    """The Java Throwable behind a Py4J error or one PySpark converted (its ``_origin``), or None."""
    return getattr(error, "java_exception", None) or getattr(error, "_origin", None)


def _is_jvm_error(error: BaseException) -> bool:
    try:
        from py4j.protocol import Py4JJavaError
    except ImportError:  # pragma: no cover - Spark Connect clients have no Py4J
        return False
    if isinstance(error, Py4JJavaError):
        return True
    try:
        from pyspark.errors.exceptions.captured import CapturedException
    except ImportError:  # pragma: no cover
        return False
    return isinstance(error, CapturedException) and _java_throwable(error) is not None


def describe(throwable: Any) -> Dict[str, Any]:
    """What the JVM says of one of its failures (kind, message, task, stack): io.sparkps.ml.python.PythonErrors."""
    from pyspark import SparkContext

    jvm = SparkContext._active_spark_context._jvm
    return json.loads(jvm.io.sparkps.ml.python.PythonErrors.describe(throwable))


def convert(error: BaseException) -> BaseException:
    """The Python exception for a JVM failure: TrainingFailure, ValueError, CancelledError, TimeoutError or
    RuntimeError, with SparkPS's message and the Java stack as its cause."""
    throwable = _java_throwable(error)
    d = describe(throwable)
    kind, message = d["kind"], d["message"]
    if kind == "training":
        failure = throwable
        while failure is not None and failure.getClass().getName() != "io.sparkps.spark.TrainingFailure":
            failure = failure.getCause()
        converted: BaseException = TrainingFailure(message, d.get("role"), d.get("index", -1), d.get("host"),
                                                   d.get("attempt", 0), d.get("remoteClass"), failure)
    elif kind == "invalid":
        converted = ValueError(message)
    elif kind == "cancelled":
        converted = concurrent.futures.CancelledError(message)
    elif kind == "timeout":
        converted = TimeoutError(message)
    else:
        converted = RuntimeError(message)
    converted.__cause__ = JavaStackTrace(d["stack"])
    return converted


def translating(recognizes: Callable[[BaseException], bool], convert: Callable[[BaseException], BaseException]):
    """A context manager that raises each error ``recognizes`` as ``convert`` makes it (the same error: unchanged),
    with the original as its cause; other errors pass unchanged."""

    @contextlib.contextmanager
    def translating_block() -> Iterator[None]:
        try:
            yield
        except Exception as e:  # noqa: BLE001 - only recognized errors are converted, others pass unchanged
            if not recognizes(e):
                raise
            converted = convert(e)
            if converted is e:
                raise
            # "from" keeps the cause (the Java stack) and hides the error it was read from.
            raise converted from (converted.__cause__ or e)

    return translating_block


#: Raises a JVM failure inside the block as its Python exception (see :func:`convert`).
translated = translating(_is_jvm_error, convert)

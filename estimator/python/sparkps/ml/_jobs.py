"""A fit in progress, as a ``concurrent.futures.Future`` of the trained model, with its progress shown live."""

import concurrent.futures
import html
import json
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional

from sparkps.ml import _errors

#: Seconds between two reads of a run's progress (one call to the JVM each).
POLL_SECONDS = 0.25
#: Seconds between two progress lines when the output is neither a notebook nor a terminal.
LINE_SECONDS = 5.0


class SettlingFuture(concurrent.futures.Future):
    """A future its own thread settles once, unless it was cancelled first."""

    def _settle(self, result: Any, error: Optional[BaseException]) -> None:
        if self.cancelled():
            return
        try:
            if error is not None:
                self.set_exception(error)
            else:
                self.set_result(result)
        except concurrent.futures.InvalidStateError:  # cancelled meanwhile
            pass


class FitJob(SettlingFuture):
    """A SparkPS fit started by ``Dl4jEstimator.fitAsync``: a future of its ``Dl4jModel``.

    ``result(timeout)`` waits for the model (raising the run's failure), ``cancel()`` stops the run,
    ``status()`` and ``progress()`` say where it stands; ``done()``, ``exception()`` and
    ``add_done_callback`` are the Future's own. The job's Java handle is ``java_job``.
    """

    def __init__(self, python_job: Any, to_model: Callable[[Any], Any], display: Optional["Display"]):
        super().__init__()
        self._pyjob = python_job
        self.java_job = python_job.job()
        self._to_model = to_model
        self._display = display
        self._snapshot: Dict[str, Any] = json.loads(python_job.snapshot())
        self._cancelling = False
        self._thread = threading.Thread(target=self._follow, name="sparkps-fit-" + self.runId(), daemon=True)
        self._thread.start()

    def runId(self) -> str:
        """The run's id (its Spark job groups are ``sparkps-<id>-...``)."""
        return self._snapshot["runId"]

    def status(self) -> str:
        """PENDING, LAUNCHING, RUNNING, SUCCEEDED, FAILED or CANCELLED."""
        return self._read()["status"]

    def progress(self) -> List[Dict[str, Any]]:
        """The latest report of every task: role, index, host, executor, attempt, step, examples, metrics, message."""
        return self._read()["tasks"]

    def line(self) -> str:
        """The progress line the command line prints: step of total, epoch, loss, examples/s, evaluation, ETA."""
        return self._read()["line"]

    def totalSteps(self) -> int:
        """The steps each worker takes in all."""
        return self._snapshot["totalSteps"]

    def cancel(self) -> bool:
        """Stops the run (its Spark jobs are cancelled and its tasks end); True unless it had already ended."""
        if self.done():
            return False
        self._cancelling = True
        self._pyjob.cancel()
        return super().cancel()

    def _read(self) -> Dict[str, Any]:
        if not self.done() or not self._snapshot["done"]:
            self._snapshot = json.loads(self._pyjob.snapshot())
        return self._snapshot

    def _follow(self) -> None:
        """Polls the run until it ends, showing its progress, then settles the future."""
        try:
            while True:
                snapshot = json.loads(self._pyjob.snapshot())
                self._snapshot = snapshot
                if self._display is not None:
                    self._display.show(snapshot)
                if snapshot["done"]:
                    break
                time.sleep(POLL_SECONDS)
            try:
                with _errors.translated():
                    model = self._to_model(self._pyjob.model(60_000))
                self._settle(model, None)
            except BaseException as e:  # noqa: BLE001 - the future carries whatever the run ended with
                self._settle(None, e)
        except BaseException as e:  # noqa: BLE001 - the JVM went away while polling
            self._settle(None, e)

    def _settle(self, model: Any, error: Optional[BaseException]) -> None:
        if self._display is not None:
            self._display.close(self._snapshot)
        super()._settle(model, error)


class Display:
    """Where a run's progress shows: a live bar in a notebook, a redrawn line on a terminal, else a line
    every few seconds. What it shows is the JVM's own progress line."""

    def __init__(self, out=None):
        self._out = out or sys.stderr
        self._handle = None
        self._last_line = 0.0
        self._notebook = _in_notebook()
        self._terminal = not self._notebook and hasattr(self._out, "isatty") and self._out.isatty()

    def show(self, snapshot: Dict[str, Any]) -> None:
        if self._notebook:
            self._show_html(snapshot)
        elif self._terminal:
            self._out.write("\r\x1b[2K" + snapshot["line"])
            self._out.flush()
        elif snapshot["done"]:
            return  # close() prints the last line
        elif time.monotonic() - self._last_line >= LINE_SECONDS and snapshot["step"] > 0:
            self._last_line = time.monotonic()
            print(snapshot["line"], file=self._out, flush=True)

    def close(self, snapshot: Dict[str, Any]) -> None:
        if self._notebook:
            self._show_html(snapshot)
        elif self._terminal:
            self._out.write("\r\x1b[2K" + snapshot["line"] + "\n")
            self._out.flush()
        else:
            print(snapshot["line"], file=self._out, flush=True)

    def _show_html(self, snapshot: Dict[str, Any]) -> None:
        from IPython.display import HTML, display

        total = max(1, snapshot["totalSteps"])
        bar = HTML('<div class="sparkps-progress"><progress value="%d" max="%d" style="width:40em"></progress> '
                   '<span>%s</span></div>' % (snapshot["step"], total, html.escape(snapshot["line"])))
        if self._handle is None:
            self._handle = display(bar, display_id=True)
        else:
            self._handle.update(bar)


def _in_notebook() -> bool:
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    shell = ipython.get_ipython()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})

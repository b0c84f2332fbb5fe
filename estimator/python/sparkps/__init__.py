"""SparkPS from Python: Deeplearning4j networks trained on Spark DataFrames with sharded parameter servers.

The estimator and model are in :mod:`sparkps.ml`. This module finds the SparkPS jar that matches the
PySpark in use and starts a local session with it::

    import sparkps
    spark = sparkps.local_session()          # local[*] with the SparkPS jar on its class path

On a cluster, give spark-submit the jar (``--jars``) or its Maven coordinate (``--packages``):
:func:`coordinate` says which.
"""

import glob
import os

__version__ = "0.1.0"
__all__ = ["__version__", "coordinate", "jar", "local_session", "scala_binary_version", "SparkPsJarNotFound"]

#: The Maven version of the jar this package was built with.
JAR_VERSION = "0.1.0-SNAPSHOT"


class SparkPsJarNotFound(RuntimeError):
    """No SparkPS jar matches the PySpark in use: the message says where it looked and what to do."""


def _pyspark_version():
    try:
        import pyspark
    except ImportError as e:  # pragma: no cover - exercised without PySpark only
        raise ImportError(
            "sparkps needs PySpark 3.5 or 4.x: pip install pyspark==3.5.9 (or 4.2.0), "
            "or pyspark-client for Spark Connect") from e
    return pyspark.__version__


def scala_binary_version(pyspark_version=None):
    """The Scala version of the Spark a PySpark release belongs to: 2.12 for 3.5, 2.13 for 4.x."""
    version = pyspark_version or _pyspark_version()
    major_minor = tuple(int(p) for p in version.split(".")[:2])
    if major_minor >= (4, 0):
        return "2.13"
    if major_minor >= (3, 5):
        return "2.12"
    raise RuntimeError("PySpark %s is older than SparkPS supports: use PySpark 3.5 or 4.x" % version)


def coordinate(pyspark_version=None):
    """The Maven coordinate to give spark-submit's ``--packages`` for this PySpark."""
    return "io.sparkps:sparkps-estimator_%s:%s" % (scala_binary_version(pyspark_version), JAR_VERSION)


def _candidates(scala):
    name = "sparkps-estimator_%s-*-all.jar" % scala
    here = os.path.dirname(os.path.abspath(__file__))
    return [
        ("inside this package", os.path.join(here, "jars", name)),
        # a source checkout: estimator/python/sparkps -> estimator/target
        ("the build directory of this checkout (mvn package)",
         os.path.join(os.path.dirname(os.path.dirname(here)), "target", name)),
        ("the local Maven repository (mvn install)",
         os.path.join(os.path.expanduser("~"), ".m2", "repository", "io", "sparkps",
                      "sparkps-estimator_%s" % scala, JAR_VERSION, name)),
    ]


def jar(pyspark_version=None):
    """The path of the SparkPS jar (with its dependencies) that matches the PySpark in use.

    Looks at ``SPARKPS_JAR`` first, then inside this package, the local Maven repository and the
    build directory of a source checkout. Raises :class:`SparkPsJarNotFound` naming each place.
    """
    scala = scala_binary_version(pyspark_version)
    given = os.environ.get("SPARKPS_JAR")
    if given:
        if not os.path.isfile(given):
            raise SparkPsJarNotFound("SPARKPS_JAR names %s, which is not a file" % given)
        if "_%s-" % scala not in os.path.basename(given):
            raise SparkPsJarNotFound(
                "SPARKPS_JAR names %s, but PySpark %s needs the Scala %s build (sparkps-estimator_%s-...-all.jar)"
                % (given, pyspark_version or _pyspark_version(), scala, scala))
        return given
    looked = []
    for where, pattern in _candidates(scala):
        found = sorted(glob.glob(pattern))
        if found:
            return found[-1]
        looked.append("%s (%s)" % (where, pattern))
    raise SparkPsJarNotFound(
        "no SparkPS jar for Scala %s found; looked in: %s. Build it (mvn install -DskipTests%s), set SPARKPS_JAR "
        "to its path, or on a cluster give spark-submit --packages %s"
        % (scala, "; ".join(looked), " -Pspark-4" if scala == "2.13" else "", coordinate(pyspark_version)))


def local_session(master="local[*]", app_name="sparkps", conf=None):
    """A local SparkSession with the SparkPS jar on its class path (an existing session is reused).

    ``conf`` adds Spark settings. ND4J's OpenMP threads are set to the cores of one task, as SparkPS
    tasks need (the default oversubscribes the cores), ND4J's OpenBLAS is told the kernels this CPU
    runs (``blas_coretype``) unless ``OPENBLAS_CORETYPE`` is set, and Spark's console progress bars are
    off (a fit shows its own).
    """
    _pyspark_version()
    from pyspark.sql import SparkSession

    # A local session's tasks run in the JVM PySpark starts now, which inherits this environment.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    builder = SparkSession.builder.master(master).appName(app_name).config("spark.jars", jar())
    builder = builder.config("spark.executorEnv.OMP_NUM_THREADS", "1")
    kernels = os.environ.get("OPENBLAS_CORETYPE") or blas_coretype()
    if kernels:
        os.environ["OPENBLAS_CORETYPE"] = kernels
        builder = builder.config("spark.executorEnv.OPENBLAS_CORETYPE", kernels)
    # A fit shows its own progress; Spark's stage bars would interleave with it.
    builder = builder.config("spark.ui.showConsoleProgress", "false")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def blas_coretype(cpuinfo="/proc/cpuinfo"):
    """The ``OPENBLAS_CORETYPE`` for ND4J's OpenBLAS on this CPU: ``"SkylakeX"`` with AVX-512 (F, CD, BW,
    DQ and VL), ``"Haswell"`` with AVX2 and FMA, else None (also where ``cpuinfo`` cannot be read).

    ND4J's OpenBLAS (0.3.19) picks its kernels by the CPU's model number and, on a model newer than it
    knows, falls back to its SSE3 (Prescott) kernels: matrix products up to 2.5x slower. The variable
    is read when the library loads, so it has to be in the environment before the JVM starts.
    """
    try:
        with open(cpuinfo) as f:
            line = next((l for l in f if l.startswith("flags")), "")
    except OSError:
        return None
    flags = set(line.partition(":")[2].split())
    if {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        return "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    return None

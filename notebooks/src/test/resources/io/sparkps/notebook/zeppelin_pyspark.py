"""The Python side of a Zeppelin note's %pyspark paragraphs, as Zeppelin's PySpark interpreter runs them.

It joins the JVM that runs the note's %spark paragraphs through that JVM's Py4J server
(PYSPARK_GATEWAY_PORT and PYSPARK_GATEWAY_SECRET, read by PySpark's own gateway code), binds
``sc`` and ``spark`` to the JVM's SparkContext and SparkSession (so a DataFrame or view one
language makes, the other reads), then runs paragraphs in one namespace: each arrives as a JSON
line on stdin, {"code": ...}, and is answered by a JSON line on stdout, {"status": "ok" or
"error", "output": what it printed, with the traceback of an error}. End of input ends it.
"""
import contextlib
import io
import json
import sys
import traceback

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession


def _join_the_jvm():
    SparkContext._ensure_initialized()
    jvm = SparkContext._jvm
    jsc = jvm.org.apache.spark.api.java.JavaSparkContext.fromSparkContext(jvm.org.apache.spark.SparkContext.getOrCreate())
    # PySpark of another Spark fails deep inside its own classes (a JavaPackage "not callable"): say so first.
    import pyspark
    if pyspark.__version__.split(".")[:2] != jsc.version().split(".")[:2]:
        raise RuntimeError("this Python's PySpark is %s, the note's Spark is %s: run the %%pyspark paragraphs with a "
                           "Python holding the PySpark of that Spark (-Dpython=...; .ci/run installs the pins of "
                           "estimator/python/requirements.txt)" % (pyspark.__version__, jsc.version()))
    sc = SparkContext(gateway=SparkContext._gateway, jsc=jsc, conf=SparkConf(_jconf=jsc.getConf()))
    spark = SparkSession(sc, jvm.org.apache.spark.sql.SparkSession.builder().getOrCreate())
    return sc, spark


def main():
    replies = sys.stdout
    sc, spark = _join_the_jvm()
    namespace = {"__name__": "__zeppelin__", "sc": sc, "spark": spark}
    for line in sys.stdin:
        code = json.loads(line)["code"]
        printed = io.StringIO()
        status = "ok"
        with contextlib.redirect_stdout(printed):
            try:
                exec(compile(code, "<%pyspark paragraph>", "exec"), namespace)
            except BaseException:  # the note's failure is reported, the interpreter goes on
                status = "error"
                traceback.print_exc(file=printed)
        replies.write(json.dumps({"status": status, "output": printed.getvalue()}) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()

"""The package as users install it: the wheel's contents, and the jar it picks for the PySpark in use."""

import glob
import os
import zipfile

import pytest

import sparkps


def test_the_wheel_holds_the_package_and_its_generated_params():
    wheels = glob.glob(os.path.join(os.environ.get("SPARKPS_WHEELS", "missing"), "sparkps-*.whl"))
    if not wheels:
        pytest.skip("run by the Maven build, which builds the wheel first (SPARKPS_WHEELS)")
    names = set(zipfile.ZipFile(wheels[0]).namelist())
    for module in ("sparkps/__init__.py", "sparkps/ml/__init__.py", "sparkps/ml/_params.py", "sparkps/ml/_stages.py",
                   "sparkps/ml/_jobs.py", "sparkps/ml/_errors.py", "sparkps/ml/embedding.py",
                   "sparkps/ml/networks.py", "sparkps/ml/_connect.py", "sparkps/datasets.py"):
        assert module in names, module
    assert not any(n.startswith("tests/") for n in names)


def test_each_pyspark_release_gets_the_jar_of_its_scala_version():
    assert sparkps.scala_binary_version("3.5.9") == "2.12"
    assert sparkps.scala_binary_version("4.2.0") == "2.13"
    assert sparkps.coordinate("4.2.0") == "io.sparkps:sparkps-estimator_2.13:" + sparkps.JAR_VERSION
    with pytest.raises(RuntimeError, match="PySpark 3.4.1 is older than SparkPS supports"):
        sparkps.scala_binary_version("3.4.1")


def test_a_jar_of_the_other_scala_version_is_refused_naming_the_one_needed(tmp_path, monkeypatch):
    wrong = tmp_path / "sparkps-estimator_2.13-0.1.0-all.jar"
    wrong.write_bytes(b"")
    monkeypatch.setenv("SPARKPS_JAR", str(wrong))
    with pytest.raises(sparkps.SparkPsJarNotFound, match=r"PySpark 3.5.9 needs the Scala 2.12 build"):
        sparkps.jar("3.5.9")


def test_no_jar_found_says_where_it_looked_and_which_packages_coordinate_to_give(tmp_path, monkeypatch):
    monkeypatch.delenv("SPARKPS_JAR", raising=False)
    monkeypatch.setattr(sparkps, "_candidates", lambda scala: [("nowhere", str(tmp_path / "*.jar"))])
    with pytest.raises(sparkps.SparkPsJarNotFound) as e:
        sparkps.jar("4.2.0")
    message = str(e.value)
    assert "no SparkPS jar for Scala 2.13 found; looked in: nowhere" in message
    assert "mvn install -DskipTests -Pspark-4" in message
    assert "--packages io.sparkps:sparkps-estimator_2.13:" in message


def test_blas_coretype_follows_the_cpus_instructions(tmp_path):
    def on(flags):
        cpuinfo = tmp_path / "cpuinfo"
        cpuinfo.write_text("processor\t: 0\nmodel\t\t: 207\nflags\t\t: %s\n\nprocessor\t: 1\nflags\t\t: avx512f\n" % flags)
        return sparkps.blas_coretype(str(cpuinfo))

    assert on("fpu sse4_2 avx avx2 fma avx512f avx512cd avx512bw avx512dq avx512vl") == "SkylakeX"
    assert on("fpu sse4_2 avx avx2 fma avx512f avx512cd") == "Haswell"  # no BW/DQ/VL: not SkylakeX's kernels
    assert on("fpu sse4_2 avx avx2 fma") == "Haswell"
    assert on("fpu sse4_2 avx") is None
    assert sparkps.blas_coretype(str(tmp_path / "missing")) is None


def test_the_sessions_jvm_runs_the_kernels_its_cpu_runs(spark):
    """local_session put OPENBLAS_CORETYPE in the JVM's environment before it started, and its OpenBLAS took it."""
    jvm = spark.sparkContext._jvm
    kernels = sparkps.blas_coretype()
    if os.environ.get("OPENBLAS_CORETYPE") and os.environ["OPENBLAS_CORETYPE"] != kernels:
        pytest.skip("OPENBLAS_CORETYPE was set to %s before the session started" % os.environ["OPENBLAS_CORETYPE"])
    if kernels is None:
        pytest.skip("a CPU without AVX2: OpenBLAS's own choice stands")
    assert jvm.System.getenv("OPENBLAS_CORETYPE") == kernels
    assert spark.sparkContext.getConf().get("spark.executorEnv.OPENBLAS_CORETYPE") == kernels
    assert jvm.io.sparkps.ml.network.BlasKernels.chosen().toString() == "Optional[%s]" % kernels.upper()
    assert jvm.io.sparkps.ml.network.BlasKernels.advice().isPresent() is False

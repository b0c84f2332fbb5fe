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

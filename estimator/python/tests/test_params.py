"""The Python stages' Params are the Java classes' Params: names, types, defaults and docs, one for one."""

import pytest

from sparkps.ml import Dl4jEstimator, Dl4jModel

CONVERTERS = {
    "org.apache.spark.ml.param.IntParam": "toInt",
    "org.apache.spark.ml.param.LongParam": "toInt",
    "org.apache.spark.ml.param.DoubleParam": "toFloat",
    "org.apache.spark.ml.param.BooleanParam": "toBoolean",
    "org.apache.spark.ml.param.StringArrayParam": "toListString",
    "org.apache.spark.ml.param.Param": "toString",
}


def java_params(java_stage):
    """name -> (class, doc, default or the marker 'no default') of a Java stage's Params."""
    out = {}
    for p in java_stage.params():
        default = java_stage.getDefault(p)
        value = default.get() if default.isDefined() else "no default"
        if p.getClass().getName() == "org.apache.spark.ml.param.StringArrayParam" and value != "no default":
            value = list(value)
        out[p.name()] = (p.getClass().getName(), p.doc(), value)
    return out


@pytest.mark.parametrize("stage", ["estimator", "model"])
def test_every_java_param_has_its_python_counterpart_with_the_same_type_default_and_doc(spark, request, stage):
    if stage == "estimator":
        python, java = Dl4jEstimator(), spark._jvm.io.sparkps.ml.Dl4jEstimator()
    else:
        python = request.getfixturevalue("model")
        java = python._java_obj
        assert isinstance(python, Dl4jModel)
    expected = java_params(java)
    actual = {p.name: p for p in python.params}
    assert sorted(actual) == sorted(expected)
    for name, (java_class, doc, default) in expected.items():
        p = actual[name]
        assert p.doc == doc, name
        assert p.typeConverter.__name__ == CONVERTERS[java_class], name
        if default == "no default":
            assert not python.hasDefault(p), name
        else:
            assert python.getOrDefault(p) == default, name
        cap = name[0].upper() + name[1:]
        assert callable(getattr(python, "get" + cap)) and callable(getattr(python, "set" + cap)), name


def test_keyword_arguments_and_setters_reach_the_java_estimator(spark):
    est = Dl4jEstimator(numWorkers=3, consistency="ASYNC", numericCols=["a", "b"]).setEpochs(4).setSeed(2**40)
    est._transfer_params_to_java()
    java = est._java_obj
    assert java.getOrDefault(java.numWorkers()) == 3
    assert java.getOrDefault(java.epochs()) == 4
    assert java.getOrDefault(java.consistency()) == "ASYNC"
    assert java.getOrDefault(java.seed()) == 2**40
    assert list(java.getOrDefault(java.numericCols())) == ["a", "b"]
    assert est.getEpochs() == 4 and est.getSeed() == 2**40

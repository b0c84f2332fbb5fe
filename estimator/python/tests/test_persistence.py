"""The stages work wherever PySpark's do: Pipeline, CrossValidator with ParamGridBuilder, save and load, and
models saved from Python load in Java and predict the same, and the other way round."""

from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.evaluation import MulticlassClassificationEvaluator
from pyspark.ml.feature import StandardScaler
from pyspark.ml.tuning import CrossValidator, CrossValidatorModel, ParamGridBuilder

from conftest import accuracy, estimator
from sparkps.ml import Dl4jEstimator, Dl4jModel


def predictions(df):
    return [(r.prediction, tuple(round(p, 5) for p in r.probability)) for r in df.orderBy("id").collect()]


def numbered(rows):
    from pyspark.sql.functions import monotonically_increasing_id

    return rows.withColumn("id", monotonically_increasing_id())


def test_an_estimator_saved_from_python_loads_with_its_params(spark, tmp_path):
    est = estimator(epochs=3, consistency="SSP", staleness=4, numericCols=["x"])
    est.save(str(tmp_path / "est"))
    loaded = Dl4jEstimator.load(str(tmp_path / "est"))
    assert isinstance(loaded, Dl4jEstimator) and loaded.uid == est.uid
    for name in ("epochs", "consistency", "staleness", "numericCols", "networkJson", "batchSize"):
        assert loaded.getOrDefault(name) == est.getOrDefault(name), name


def test_a_model_saved_from_python_loads_in_java_and_predicts_the_same(spark, model, test_rows, tmp_path):
    rows = numbered(test_rows).cache()
    path = str(tmp_path / "model")
    model.save(path)
    java_model = spark._jvm.io.sparkps.ml.Dl4jModel.load(path)
    from pyspark.sql import DataFrame

    in_java = DataFrame(java_model.transform(rows._jdf), spark)
    assert predictions(in_java) == predictions(model.transform(rows))


def test_a_model_saved_from_java_loads_in_python_and_predicts_the_same(spark, model, test_rows, tmp_path):
    rows = numbered(test_rows).cache()
    path = str(tmp_path / "java-model")
    model._java_obj.write().save(path)  # the Java class's own writer, called as Java code calls it
    loaded = Dl4jModel.load(path)
    assert isinstance(loaded, Dl4jModel) and loaded.uid == model.uid
    assert predictions(loaded.transform(rows)) == predictions(model.transform(rows))


def test_a_pipeline_fits_saves_and_loads_with_the_estimator_in_it(spark, train, test_rows, tmp_path):
    raw = train.withColumnRenamed("features", "raw")
    pipeline = Pipeline(stages=[StandardScaler(inputCol="raw", outputCol="features"), estimator(epochs=1)])
    pipeline.save(str(tmp_path / "pipeline"))
    reloaded = Pipeline.load(str(tmp_path / "pipeline"))
    assert isinstance(reloaded.getStages()[1], Dl4jEstimator)
    assert reloaded.getStages()[1].getEpochs() == 1

    fitted = reloaded.fit(raw)
    assert isinstance(fitted.stages[1], Dl4jModel)
    held_out = numbered(test_rows.withColumnRenamed("features", "raw")).cache()
    fitted.save(str(tmp_path / "pipeline-model"))
    loaded = PipelineModel.load(str(tmp_path / "pipeline-model"))
    assert isinstance(loaded.stages[1], Dl4jModel)
    assert predictions(loaded.transform(held_out)) == predictions(fitted.transform(held_out))
    out = loaded.transform(held_out)
    assert out.where("prediction = label").count() / out.count() > 0.8


def test_cross_validation_picks_among_a_param_grid_and_the_best_model_saves(spark, train, tmp_path):
    est = estimator(epochs=2)
    grid = ParamGridBuilder().addGrid(est.batchSize, [16, 750]).build()
    evaluator = MulticlassClassificationEvaluator(metricName="accuracy")
    cv = CrossValidator(estimator=est, estimatorParamMaps=grid, evaluator=evaluator, numFolds=2, seed=5)
    cv_model = cv.fit(train)
    assert len(cv_model.avgMetrics) == 2
    # A fold trains on 1,500 rows, 750 a worker: 2 epochs of 46 steps of 16 beat 2 steps of all 750.
    assert cv_model.avgMetrics[0] > 0.8 and cv_model.avgMetrics[0] > cv_model.avgMetrics[1] + 0.1, cv_model.avgMetrics
    best = cv_model.bestModel
    assert isinstance(best, Dl4jModel)
    cv_model.save(str(tmp_path / "cv"))
    loaded = CrossValidatorModel.load(str(tmp_path / "cv"))
    assert isinstance(loaded.bestModel, Dl4jModel)
    assert accuracy(loaded.bestModel, train) > 0.8

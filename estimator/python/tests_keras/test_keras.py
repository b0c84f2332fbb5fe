"""tf_keras models, objects and .h5 files, imported through DL4J's Keras import and trained by SparkPS."""

import pytest

from conftest import accuracy, dl4j_params
from sparkps.ml import Dl4jEstimator
from sparkps.ml.keras import model_json


def mlp(keras, features=12, classes=3):
    L = keras.layers
    model = keras.Sequential([L.Input(shape=(features,)), L.Dense(32, activation="relu"), L.Dropout(0.1),
                              L.Dense(classes, activation="softmax")], name="mlp")
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
    return model


def test_a_keras_model_object_trains_on_the_parameter_servers(spark, keras, train, test_rows):
    model = mlp(keras)
    estimator = Dl4jEstimator(network=model, numWorkers=2, numPs=1, epochs=2, batchSize=32, seed=3)
    assert estimator.getNetworkJson() == model_json(model), "the model travels as its Keras JSON"
    trained = estimator.fit(train)
    assert accuracy(trained, test_rows) > 0.9
    java_net = trained._java_obj.network()
    assert java_net.numParams() == model.count_params() == 12 * 32 + 32 + 32 * 3 + 3


def test_an_h5_file_trains_as_keras_colon_path(spark, keras, train, test_rows, tmp_path):
    path = str(tmp_path / "mlp.h5")
    mlp(keras).save(path, save_format="h5")
    trained = Dl4jEstimator(network="keras:" + path, numWorkers=2, epochs=2, batchSize=32, seed=3).fit(train)
    assert accuracy(trained, test_rows) > 0.9


def test_sequential_and_functional_models_of_the_usual_layers_import_with_kerass_parameter_counts(spark, keras):
    L = keras.layers
    jvm = spark.sparkContext._jvm
    cnn = keras.Sequential([L.Input(shape=(28, 28, 1)), L.Conv2D(8, 3, activation="relu"), L.BatchNormalization(),
                            L.MaxPooling2D(), L.Conv2D(4, 3, padding="same", activation="relu"),
                            L.AveragePooling2D(), L.Flatten(), L.Dropout(0.3), L.Dense(10, activation="softmax")])
    cnn.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    x = keras.Input(shape=(20,))
    h = L.Dense(16, activation="tanh")(x)
    h = L.BatchNormalization()(h)
    h = L.Dropout(0.2)(h)
    functional = keras.Model(x, L.Dense(2, activation="sigmoid")(h))
    functional.compile(optimizer=keras.optimizers.RMSprop(0.01), loss="binary_crossentropy")
    tokens = keras.Sequential([L.Input(shape=(6,)), L.Embedding(100, 4), L.Flatten(),
                               L.Dense(3, activation="softmax")])
    tokens.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
    for model in (cnn, functional, tokens):
        dl4j = jvm.io.sparkps.ml.KerasNetworks.toDl4jJson(model_json(model))
        assert dl4j_params(spark, dl4j) == model.count_params(), model.name


def test_a_layer_dl4j_cannot_import_is_named_before_any_spark_job(spark, keras):
    L = keras.layers
    model = keras.Sequential([L.Input(shape=(12,)), L.Dense(8, activation="relu"), L.LayerNormalization(name="ln"),
                              L.Dense(3, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    jobs = len(spark.sparkContext.statusTracker().getJobIdsForGroup())
    with pytest.raises(ValueError) as e:
        Dl4jEstimator(network=model)
    assert "layer 'ln' (LayerNormalization) does not import" in str(e.value)
    assert "use BatchNormalization" in str(e.value)
    assert len(spark.sparkContext.statusTracker().getJobIdsForGroup()) == jobs


def test_settings_that_do_not_import_are_named(spark, keras):
    L = keras.layers
    logits = keras.Sequential([L.Input(shape=(4,)), L.Dense(2)])
    logits.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    with pytest.raises(ValueError, match="from_logits=True"):
        Dl4jEstimator(network=logits)
    clipped = mlp(keras)
    clipped.compile(optimizer=keras.optimizers.Adam(clipnorm=1.0), loss="sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match="clipnorm=1.0 does not import"):
        Dl4jEstimator(networkJson=clipped)
    uncompiled = keras.Sequential([L.Input(shape=(4,)), L.Dense(2, activation="softmax")], name="raw")
    with pytest.raises(ValueError, match="'raw' is not compiled"):
        Dl4jEstimator(network=uncompiled)


def test_a_keras_3_model_is_refused_with_the_way_to_keras_2(spark, tmp_path):
    import keras as keras3

    model = keras3.Sequential([keras3.Input(shape=(4,)), keras3.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    with pytest.raises(TypeError, match="Keras 3 model.*tf_keras"):
        Dl4jEstimator(network=model)
    with pytest.raises(ValueError, match="Keras 3 .keras archive"):
        Dl4jEstimator(network="keras:" + str(tmp_path / "model.keras"))


def test_a_keras_cnn_trains_on_fashion_mnist_images_from_their_flat_pixels(spark, keras):
    from sparkps.datasets import fashion_mnist

    train = fashion_mnist(spark, "train").limit(8000).cache()
    test = fashion_mnist(spark, "t10k").limit(2000).cache()
    L = keras.layers
    cnn = keras.Sequential([L.Input(shape=(28, 28, 1)), L.Conv2D(8, 3, activation="relu"), L.BatchNormalization(),
                            L.MaxPooling2D(), L.Flatten(), L.Dropout(0.2), L.Dense(10, activation="softmax")])
    cnn.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    trained = Dl4jEstimator(network=cnn, numWorkers=2, epochs=2, batchSize=64, seed=1).fit(train)
    assert accuracy(trained, test) > 0.65  # seeds 1-3 gave 0.71-0.78 here; one class for all would score 0.10


def test_a_functional_model_trains_as_a_graph(spark, keras, train, test_rows):
    L = keras.layers
    x = keras.Input(shape=(12,))
    h = L.BatchNormalization()(L.Dense(16, activation="relu")(x))
    model = keras.Model(x, L.Dense(3, activation="softmax")(h))
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
    trained = Dl4jEstimator(network=model, numWorkers=2, epochs=2, batchSize=32, seed=3).fit(train)
    assert "ComputationGraph" in trained._java_obj.network().getClass().getSimpleName()
    assert accuracy(trained, test_rows) > 0.9

"""Writes the Keras models the Java tests import (run with tf-keras 2.21: python make.py).

Each file is what sparkps.ml.keras.model_json gives for the model: model.to_json() with the compile
settings under "training_config", as an .h5 file keeps them.
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "python"))
import tf_keras as keras  # noqa: E402
from sparkps.ml.keras import model_json  # noqa: E402

L = keras.layers


def mlp():
    m = keras.Sequential([L.Input(shape=(784,)), L.Dense(64, activation="relu"), L.Dropout(0.2),
                          L.Dense(10, activation="softmax")], name="mlp")
    m.compile(optimizer=keras.optimizers.Adam(0.002), loss="sparse_categorical_crossentropy")
    return m


def cnn():
    m = keras.Sequential([L.Input(shape=(28, 28, 1)), L.Conv2D(6, 5, activation="relu"), L.BatchNormalization(),
                          L.MaxPooling2D(), L.Conv2D(8, 3, activation="relu"), L.AveragePooling2D(), L.Flatten(),
                          L.Dropout(0.25), L.Dense(10, activation="softmax")], name="cnn")
    m.compile(optimizer="rmsprop", loss=keras.losses.SparseCategoricalCrossentropy())
    return m


def functional():
    x = keras.Input(shape=(784,), name="pixels")
    h = L.Dense(32, activation="relu", name="hidden")(x)
    h = L.BatchNormalization(name="norm")(h)
    y = L.Dense(10, activation="softmax", name="classes")(h)
    m = keras.Model(x, y, name="functional")
    m.compile(optimizer=keras.optimizers.SGD(0.05), loss="categorical_crossentropy")
    return m


def embedding():
    m = keras.Sequential([L.Input(shape=(4,)), L.Embedding(50, 3), L.Flatten(), L.Dense(2, activation="softmax")],
                         name="embedding")
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return m


def separate_activation():
    m = keras.Sequential([L.Input(shape=(8,)), L.Dense(2), L.Activation("softmax")], name="separate_activation")
    m.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
    return m


def layer_norm():
    m = keras.Sequential([L.Input(shape=(8,)), L.Dense(4, activation="relu", name="dense_in"),
                          L.LayerNormalization(name="ln"), L.Dense(2, activation="softmax")], name="layer_norm")
    m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return m


def logits():
    m = keras.Sequential([L.Input(shape=(8,)), L.Dense(2)], name="logits")
    m.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def momentum():
    m = keras.Sequential([L.Input(shape=(8,)), L.Dense(2, activation="softmax")], name="momentum")
    m.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9), loss="sparse_categorical_crossentropy")
    return m


def blobs_mlp():
    """For the Python tests' blobs: 12 features, 3 classes."""
    m = keras.Sequential([L.Input(shape=(12,)), L.Dense(16, activation="relu"), L.Dense(3, activation="softmax")],
                         name="blobs_mlp")
    m.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
    return m


def tiny():
    m = keras.Sequential([L.Input(shape=(8,)), L.Dense(4, activation="relu"), L.Dense(2, activation="softmax")],
                         name="tiny")
    m.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy")
    return m


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    tiny().save(os.path.join(here, "tiny.h5"), save_format="h5")
    for make in [mlp, cnn, functional, embedding, separate_activation, layer_norm, logits, momentum, blobs_mlp]:
        with open(os.path.join(here, make.__name__ + ".json"), "w") as f:
            f.write(json.dumps(json.loads(model_json(make())), indent=1, sort_keys=True) + "\n")

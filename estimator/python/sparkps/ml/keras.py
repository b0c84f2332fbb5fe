"""Keras models as SparkPS networks.

A compiled ``tf_keras`` (Keras 2) model, Sequential or functional, is imported through DL4J's Keras
import on the driver and trained on the parameter servers like any other network::

    import tf_keras as keras
    model = keras.Sequential([keras.Input(shape=(784,)), keras.layers.Dense(256, activation="relu"),
                              keras.layers.Dense(10, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    Dl4jEstimator(network=model, numWorkers=2).fit(train_df)

or, saved with ``model.save("model.h5")``, as ``Dl4jEstimator(network="keras:/path/model.h5")`` (a path
the driver reads, on any Hadoop file system). The architecture, the initializers, the loss and the
optimizer come across; the weights do not: training starts from the initializers, as a fresh Keras model
does. Labels are class indexes (``sparse_categorical_crossentropy`` trains as the one-hot kind) and the
features column a flat vector per row (an ``Input(shape=(28, 28, 1))`` reads it reshaped, channels last).

Keras 3's own ``.keras`` format is not read: DL4J's import knows Keras 2's JSON and HDF5 files. A model
built with Keras 3 (``import keras`` with TensorFlow 2.16 or later) is refused with how to build it with
``tf_keras`` instead.
"""

import json
import os
import tempfile
from typing import Any

__all__ = ["is_keras_model", "model_json"]


def is_keras_model(value: Any) -> bool:
    """Whether ``value`` is a Keras model object (of ``tf_keras`` or of Keras 3), without importing either."""
    for cls in type(value).__mro__:
        module = cls.__module__ or ""
        if cls.__name__ in ("Model", "Functional", "Sequential") and (
                module.startswith("tf_keras") or module.startswith("keras") or module.startswith("tensorflow")):
            return True
    return False


def _keras3(model: Any) -> bool:
    return any((cls.__module__ or "").startswith("keras.") or (cls.__module__ or "") == "keras"
               for cls in type(model).__mro__ if cls.__name__ in ("Model", "Functional", "Sequential"))


def model_json(model: Any) -> str:
    """The JSON SparkPS imports for a compiled ``tf_keras`` model: ``model.to_json()`` with the compile
    settings under ``"training_config"``, as an ``.h5`` file keeps them (the estimator's ``networkJson``)."""
    if not is_keras_model(model):
        raise TypeError("a Keras model was expected (a compiled tf_keras.Sequential or tf_keras.Model), got %s"
                        % type(model).__name__)
    name = getattr(model, "name", "?")
    if _keras3(model):
        raise TypeError("Keras model %r is a Keras 3 model, which DL4J's Keras import does not read: build it with "
                        "tf_keras (pip install tf-keras; import tf_keras as keras), or set TF_USE_LEGACY_KERAS=1 "
                        "before importing TensorFlow so that tf.keras is Keras 2" % name)
    if getattr(model, "optimizer", None) is None or not getattr(model, "compiled_loss", None):
        raise ValueError("Keras model %r is not compiled, so it has no loss or optimizer to import: call "
                         "model.compile(optimizer=\"adam\", loss=\"sparse_categorical_crossentropy\") first" % name)
    if not model.built:
        raise ValueError("Keras model %r is not built, so its input shape is unknown: start it with "
                         "keras.Input(shape=(features,))" % name)
    meta = _metadata(model)
    config = json.loads(meta["model_config"]) if isinstance(meta["model_config"], str) else meta["model_config"]
    for key in ("keras_version", "backend"):
        if key in meta:
            config.setdefault(key, meta[key])
    training = meta.get("training_config")
    if training is not None:
        config["training_config"] = json.loads(training) if isinstance(training, str) else training
    return json.dumps(config, default=_plain)


def _plain(value: Any) -> Any:
    """JSON for what Keras's own metadata may hold besides JSON: NumPy scalars and arrays, Keras objects."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "get_config"):
        return {"class_name": type(value).__name__, "config": value.get_config()}
    raise TypeError("cannot write %r of the Keras model's configuration as JSON" % (value,))


def _metadata(model: Any) -> dict:
    """What an .h5 file keeps besides the weights: the model's config, its compile settings, the versions."""
    try:  # tf_keras's own code for it, without writing the weights
        from tf_keras.src.saving.legacy import saving_utils
        return saving_utils.model_metadata(model, include_optimizer=True)
    except ImportError:
        pass
    import h5py  # a dependency of TensorFlow

    with tempfile.TemporaryDirectory(prefix="sparkps-keras-") as tmp:
        path = os.path.join(tmp, "model.h5")
        model.save(path, save_format="h5")
        with h5py.File(path, "r") as f:
            return {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}

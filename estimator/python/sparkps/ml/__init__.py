"""SparkPS's PySpark ML stages: the estimator that trains a Deeplearning4j network with parameter servers,
its model, embedding columns, and a fit's future.

    from sparkps.ml import Dl4jEstimator, Dl4jModel, EmbeddingColumn
"""

from sparkps.ml._errors import JavaStackTrace, TrainingFailure
from sparkps.ml._jobs import FitJob
from sparkps.ml._stages import Dl4jEstimator, Dl4jModel, _alias_java_packages
from sparkps.ml.embedding import EmbeddingColumn

__all__ = ["Dl4jEstimator", "Dl4jModel", "EmbeddingColumn", "FitJob", "JavaStackTrace", "TrainingFailure"]

#: Whether a fit shows its progress by default (a live bar in a notebook, a line on a terminal or in a log).
show_progress = True

_alias_java_packages()

"""Categorical columns trained as embedding tables on the parameter servers."""

import json
from typing import Any, Dict, List, Optional


class EmbeddingColumn:
    """A categorical column as an embedding table (``io.sparkps.ml.param.EmbeddingColumn``).

    Only what is given is sent; the JVM fills in the rest with its defaults (dynamic ids, row-wise
    AdaGrad at 0.05, sum pooling, ...) and checks the whole when the estimator's Param is set::

        EmbeddingColumn("C1", dim=16, buckets=100_000, optimizer="ADAGRAD", learningRate=0.05)
    """

    FIELDS = ("buckets", "optimizer", "learningRate", "pooling", "minCount", "evictAfterSteps",
              "maxRowsPerShard", "initScale")

    def __init__(self, column: str, dim: int, **options: Any):
        unknown = sorted(set(options) - set(self.FIELDS))
        if unknown:
            raise TypeError("EmbeddingColumn %r: unknown option(s) %s; the options are %s"
                            % (column, ", ".join(unknown), ", ".join(self.FIELDS)))
        self.column = column
        self.dim = dim
        self.options: Dict[str, Any] = dict(options)

    def to_dict(self) -> Dict[str, Any]:
        return dict({"column": self.column, "dim": self.dim}, **self.options)

    @staticmethod
    def to_json(columns: Optional[List["EmbeddingColumn"]]) -> str:
        """The JSON the estimator's ``embeddingColumns`` Param holds."""
        out = []
        for c in columns or []:
            if not isinstance(c, EmbeddingColumn):
                raise TypeError("embeddingColumns takes EmbeddingColumn objects or their JSON, not %r" % (c,))
            out.append(c.to_dict())
        return json.dumps(out)

    def __repr__(self) -> str:
        return "EmbeddingColumn(%s)" % ", ".join("%s=%r" % kv for kv in self.to_dict().items())

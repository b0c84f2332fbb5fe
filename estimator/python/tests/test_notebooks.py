"""The PySpark notebook runs top to bottom in an ordinary Python 3 kernel, with its results checked."""

import re

import pytest

from notebooks import execute, html, text


@pytest.mark.notebook
def test_the_pyspark_notebook_trains_fashion_mnist_and_a_click_through_model(tmp_path):
    nb = execute("pyspark.ipynb", tmp_path)
    out = text(nb)
    assert "60000 training images, 10000 test images" in out, out
    accuracy = re.search(r"test accuracy (0\.\d+)", out)
    assert accuracy and float(accuracy.group(1)) > 0.8, out
    auc = re.search(r"held-out AUC (0\.\d+) against the planted model's (0\.\d+)", out)
    assert auc and float(auc.group(1)) > float(auc.group(2)) - 0.05, out
    bars = html(nb)
    assert '<progress value="' in bars and "[sparkps] step " in bars, "the fit's live bar"
    assert "SUCCEEDED" in out and "Traceback" not in out

"""The Spark Connect notebook runs top to bottom in a kernel of this client Python (no JVM) against the server."""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

from notebooks import execute, text  # noqa: E402


def test_the_connect_notebook_trains_on_the_server_and_saves_the_model(server, tmp_path):
    nb = execute("spark-connect.ipynb", tmp_path, env={"SPARKPS_CONNECT_URL": server.url})
    out = text(nb)
    assert "12000 training images, 2000 test images, sent to the server" in out, out
    accuracy = re.search(r"SUCCEEDED: test accuracy (0\.\d+)", out)
    assert accuracy and float(accuracy.group(1)) > 0.75, out
    assert "the loaded model: test accuracy %s" % accuracy.group(1) in out, out

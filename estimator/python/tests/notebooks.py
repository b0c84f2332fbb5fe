"""Runs a notebook as Jupyter does, in a kernel of this very Python (so that it has PySpark and sparkps)."""

import json
import os
import sys

NOTEBOOKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "notebooks", "python")


def execute(name, workdir, env=None, timeout=1800):
    """Executes ``notebooks/python/<name>`` with nbclient; returns the executed notebook."""
    import nbformat
    from nbclient import NotebookClient

    kernels = os.path.join(str(workdir), "kernels", "sparkps-python")
    os.makedirs(kernels)
    with open(os.path.join(kernels, "kernel.json"), "w") as f:
        json.dump({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                   "display_name": "Python 3 (the build's)", "language": "python"}, f)
    os.environ["JUPYTER_PATH"] = str(workdir)  # the kernel above first
    for key, value in (env or {}).items():
        os.environ[key] = value
    nb = nbformat.read(os.path.join(NOTEBOOKS, name), as_version=4)
    NotebookClient(nb, kernel_name="sparkps-python", timeout=timeout,
                   resources={"metadata": {"path": str(workdir)}}).execute()
    return nb


def text(nb):
    """Every text output of the notebook, streams and results, in order."""
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            if o.get("output_type") == "stream":
                out.append(o.get("text", ""))
            elif "data" in o and "text/plain" in o["data"]:
                out.append(o["data"]["text/plain"])
    return "\n".join(out)


def html(nb):
    return "\n".join(o["data"]["text/html"] for cell in nb.cells for o in cell.get("outputs", [])
                     if "data" in o and "text/html" in o["data"])

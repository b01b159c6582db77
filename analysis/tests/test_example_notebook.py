"""examples/lhp_headline.ipynb runs, cell by cell, through Debian's jupyter-nbconvert and
python3-ipykernel (scripts/deps.sh), on run-basic through the public API."""
import json
import os
import shutil
import subprocess


from conftest import BASIC, HERE

NOTEBOOK = os.path.join(os.path.dirname(HERE), "examples", "lhp_headline.ipynb")


def run_notebook(tmp_path, results: str) -> subprocess.CompletedProcess:
    nbconvert = shutil.which("jupyter-nbconvert", path="/usr/bin")
    assert nbconvert, "jupyter-nbconvert is missing: apt-get install jupyter-nbconvert python3-ipykernel"
    env = dict(os.environ, SPINLAB_RESULTS=results, PYTHONPATH=os.path.dirname(HERE),
               PATH="/usr/bin:" + os.environ.get("PATH", ""), PYDEVD_DISABLE_FILE_VALIDATION="1",
               JUPYTER_PLATFORM_DIRS="1")
    env.pop("MPLBACKEND", None)  # the kernel's inline backend puts the figure into the notebook
    return subprocess.run([nbconvert, "--to", "notebook", "--execute", "--output-dir", str(tmp_path),
                           "--ExecutePreprocessor.timeout=120", NOTEBOOK],
                          env=env, capture_output=True, text=True, timeout=300)


def outputs(path) -> tuple[str, int]:
    """The notebook's text outputs, and how many PNG images it holds."""
    nb = json.load(open(path))
    outs = [o for c in nb["cells"] for o in c.get("outputs", [])]
    text = "\n".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", "")) for o in outs)
    return text, sum("image/png" in o.get("data", {}) for o in outs)


def test_the_notebook_loads_a_run_and_redraws_the_headline(tmp_path):
    p = run_notebook(tmp_path, BASIC)
    assert p.returncode == 0, p.stderr[-3000:]
    text, images = outputs(tmp_path / "lhp_headline.ipynb")
    assert "run-basic: 8 long waits (>= 1048576 cycles)" in text
    assert "host-load: 0.413 % of vCPU time spun behind a preempted holder; 16.6x the baseline" in text
    assert images == 1


def test_a_failing_cell_fails_the_run(tmp_path):
    p = run_notebook(tmp_path, str(tmp_path / "no-such-run"))
    assert p.returncode != 0 and "no such results directory" in p.stderr

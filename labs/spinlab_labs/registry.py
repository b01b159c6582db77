"""The labs: every folder labs/N-name/ with a check.py is lab N.

A lab folder holds README.md (the worksheet), its experiment spec lab.ini, and check.py, which
defines:
  TITLE   one line
  GOAL    one sentence (what `spinlab lab list` prints under the title)
  MINUTES how long `spinlab lab start N` takes on 2 host cores under TCG (measured; a string)
  RUNS    what `spinlab lab start N` runs, in order: (subdir, [options]) is a spinlab-run with
          --spec lab.ini and those options; subdir None writes the run straight into the lab's
          results directory, a name writes results/labN-.../NAME/ (lab 3: one run per lock
          algorithm). (subdir, [options], "vm") is a `spinlab-vm run` with those options whose
          console is saved as results/labN-.../NAME/console.log (lab 5's lockbench --verify).
  check(results_dir) -> [observe.Observation]
"""
import glob
import importlib.util
import os
import re
from dataclasses import dataclass

LABS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclass
class Lab:
    number: int
    slug: str      # the folder name without its number: 'measuring-spinlocks'
    folder: str    # absolute path of labs/N-slug
    module: object

    @property
    def spec(self) -> str:
        return os.path.join(self.folder, "lab.ini")

    @property
    def worksheet(self) -> str:
        return os.path.join(self.folder, "README.md")


def _load(folder: str):
    name = "spinlab_lab_" + re.sub(r"\W", "_", os.path.basename(folder))
    spec = importlib.util.spec_from_file_location(name, os.path.join(folder, "check.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def labs(labs_dir: str = LABS_DIR) -> list:
    """Every lab, by number."""
    out = []
    for check in sorted(glob.glob(os.path.join(labs_dir, "*", "check.py"))):
        folder = os.path.dirname(check)
        m = re.fullmatch(r"(\d+)-(.+)", os.path.basename(folder))
        if m:
            out.append(Lab(int(m.group(1)), m.group(2), folder, _load(folder)))
    return sorted(out, key=lambda lab: lab.number)


def lab(number: int, labs_dir: str = LABS_DIR) -> Lab | None:
    return next((x for x in labs(labs_dir) if x.number == number), None)

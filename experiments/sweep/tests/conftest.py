"""Shared by the sweep's tests: the analysis package (spinlab_report, which the sweep reads results
with) on sys.path, as spinlab-sweep puts it on PYTHONPATH in a source tree."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "analysis"))

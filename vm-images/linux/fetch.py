#!/usr/bin/python3
"""Fetch the Linux guest's Debian packages into build/linux/: `spinlab-linux fetch` (--help)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from spinlab_linux.cli import main  # noqa: E402

sys.exit(main(["fetch", *sys.argv[1:]]))

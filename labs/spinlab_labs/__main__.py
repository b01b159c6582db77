"""`python3 -P -m spinlab_labs BINDIR LABS_DIR ARGS...`: `spinlab lab ARGS...` as the spinlab front-end
starts it (frontend/spinlab.in), with PYTHONPATH naming the labs folder and the analysis package.
BINDIR: the front-end's bin/ (the spinlab-* tools); LABS_DIR: the labs folder."""
import sys

from spinlab_labs import cli

if len(sys.argv) < 3:
    sys.exit("usage: python3 -m spinlab_labs BINDIR LABS_DIR [spinlab lab ARGS...] (spinlab lab runs this)")
sys.exit(cli.main(sys.argv[3:], sys.argv[1], sys.argv[2]))

"""spinlab-sweep: experiment sweeps through Snakemake (see cli.py)."""

"""spinlab_report: a spinlab results directory as tables, figures and the LHP verdict.

The public API (analysis/README.md, "The Python API"):

    import spinlab_report as s
    r = s.load("results/latest")        # a Results: DataFrames waits, classes, timeline; meta,
    r.waits.groupby("class").size()     # clock, summary, verdict, problems

The input contract (results/<run-id>/ layout) is written once, in analysis/README.md.
Computation lives in pure modules (buckets, cdf, confidence, lhp, aggregate, summary);
each figure has its own fig_*.py module; report_doc builds the report that render_md and
render_html write out; cli.py is spinlab-report's command line.
"""


class NamesFileError(RuntimeError):
    """The build's abi_names.json (the ABI's enum names, names.py) is missing or malformed."""


from .api import Results, load  # noqa: E402  (after NamesFileError, which names.py raises)

__all__ = ["NamesFileError", "Results", "load"]

"""spinlab-report: turns a spinlab results directory into the log2 wait table, CDFs and the LHP verdict.

The input contract (results/<run-id>/ layout) is written once, in analysis/README.md.
Computation lives in pure modules (buckets, cdf, confidence, lhp, aggregate, summary);
each figure has its own fig_*.py module; report_doc builds the report that render_md and
render_html write out.
"""


class NamesFileError(RuntimeError):
    """The build's abi_names.json (the ABI's enum names, names.py) is missing or malformed."""

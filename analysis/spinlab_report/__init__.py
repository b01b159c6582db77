"""spinlab_report: a spinlab results directory as tables, figures and the LHP verdict.

The public API (analysis/README.md, "The Python API"):

    import spinlab_report as s
    r = s.load("results/latest")        # a Results: DataFrames waits, classes, timeline; meta,
    r.waits.groupby("cause").size()     # clock, summary, verdict, problems

The input contract (results/<run-id>/ layout) is written once, in analysis/README.md.
Computation lives in pure modules (buckets, cdf, confidence, lhp, attribution, aggregate,
summary); each figure has its own fig_*.py module; report_doc builds the report that render_md
and render_html write out; cli.py is spinlab-report's command line.
"""


class NamesFileError(RuntimeError):
    """The build's abi_names.json (the ABI's enum names, names.py) is missing or malformed."""


from .api import Results, load  # noqa: E402  (after NamesFileError, which names.py raises)
# The functions the labs' checkers and the sweep call besides load (analysis/README.md, "The Python
# API", "For tools"): the reader's own objects and the report's rules over them, by these names
# only; the modules behind them are the package's inside, free to change.
from .aggregate import invariant_state, rep_hists, threads_per_cpu  # noqa: E402
from .buckets import LONG_K, count_at_or_above  # noqa: E402
from .buckets import merge as merge_hists  # noqa: E402
from .confidence import log_ratio  # noqa: E402
from .contract import OFF_STATES, ContractError  # noqa: E402
from .freeze_lengths import freeze_ms as freeze_phase_ms, record_path as freeze_record_path  # noqa: E402
from .ground_truth import covered as covered_by_windows, effective_windows  # noqa: E402
from .lhp import HOLDER_OFF  # noqa: E402
from .names import LHP_CLASS, LONG_WAIT_THRESHOLD  # noqa: E402
from .parallel import forked_map  # noqa: E402
from .reader import load_run  # noqa: E402
from .throughput import rep_value as rep_throughput  # noqa: E402
from .trace_stacks import phase_of as stacks_phase, read_sites as stacks_sites, run as stacks_run  # noqa: E402
from .verdict import off_share as vcpu_off_share, rep_values as rep_verdict  # noqa: E402
from .attribution import long_waits_share  # noqa: E402

__all__ = ["NamesFileError", "Results", "load",
           "ContractError", "HOLDER_OFF", "LHP_CLASS", "OFF_STATES", "LONG_K", "LONG_WAIT_THRESHOLD", "count_at_or_above",
           "covered_by_windows", "effective_windows", "forked_map", "freeze_phase_ms", "freeze_record_path",
           "invariant_state", "load_run", "log_ratio",
           "long_waits_share", "merge_hists", "rep_hists", "rep_throughput", "rep_verdict", "stacks_phase",
           "stacks_run", "stacks_sites", "threads_per_cpu", "vcpu_off_share"]

"""Command line of spinlab-report: one run's report, or --compare of several runs."""
import argparse
import os
import sys

from . import compare, index, reader, progress, report
from .contract import ContractError
from .summary import Options

EPILOG = """\
outputs (into --out, default the results directory itself):
  table.txt, table.csv   the log2 wait table (2^k / count / %) per phase
  summary.json           key figures per phase (see analysis/README.md)
  figures/*.png, *.svg   one file pair per figure
  report.md, report.html the report; report.html embeds its figures
  ../index.html          every run beside this one (date, spec, phases, state, verdict, link)

exit status: 0 report written (gaps in the data are stated in it), 2 bad arguments or a
results directory that breaks the contract (the message names the file and field).

EXAMPLES:
  spinlab-report results/latest
  spinlab-report results/20250101-120000 --long-wait-threshold 2^22 --confidence 0.99
  spinlab-report results/latest --out /tmp/report --baseline idle-host
  spinlab-report --compare results/run-tas results/run-ticket --out results/tas-vs-ticket
"""


def cycles_arg(text: str) -> int:
    """A cycle count written as an integer (4194304) or a power of two (2^22)."""
    t = text.strip().replace("**", "^")
    try:
        value = 2 ** int(t[2:]) if t.startswith("2^") else int(t, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a cycle count (use e.g. 1048576 or 2^20)") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"'{text}' must be at least 1 cycle")
    return value


def confidence_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a confidence level in (0, 1), e.g. 0.95")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="spinlab-report", formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="Turn a spinlab results directory into the log2 wait table, wait-time "
                                            "CDFs, lock-holder-preemption shares and throughput, as "
                                            "report.md and a self-contained report.html.", epilog=EPILOG)
    p.add_argument("results", nargs="?", default="results/latest",
                   help="results directory of one run (default: results/latest)")
    p.add_argument("--compare", nargs="+", metavar="RUN", help="compare these results directories "
                   "(two or more; differences are relative to the first)")
    p.add_argument("--trace", metavar="FILE", help="report on one trace (a trace file of spinlab-collect trace "
                   "record, or its CTF export directory): the Trace section alone, into --out (default FILE.report/); "
                   "a trace in a results directory's snapshots/ uses the run's clock.json and timeline.csv")
    p.add_argument("--out", help="output directory (default: the results directory; with --compare: "
                   "compare-<first>-vs-<second> next to the first run)")
    # --threshold: its name before 2026-12, still taken
    p.add_argument("--long-wait-threshold", "--threshold", dest="long_wait_threshold", type=cycles_arg,
                   default=Options.long_wait_threshold,
                   help=f"a long wait for the LHP share, in cycles (default {Options.long_wait_threshold}: the ABI's "
                   "long-wait threshold, the kernel's long-wait= default)")
    p.add_argument("--confidence", type=confidence_arg, default=0.95,
                   help="confidence level of throughput intervals (default 0.95)")
    p.add_argument("--baseline", help="phase throughput changes are relative to (default idle-host, "
                   "else the first phase)")
    return p


def trace_report(args) -> dict:
    if not os.path.exists(args.trace):
        raise ContractError(f"{args.trace}: no such trace")
    run_dir = os.path.dirname(os.path.dirname(os.path.abspath(args.trace)))
    clock = timeline = None
    if os.path.basename(os.path.dirname(os.path.abspath(args.trace))) == "snapshots" and \
            os.path.exists(os.path.join(run_dir, "meta.json")):
        run = reader.load_run(run_dir)
        if run.clock is not None and run.timeline is not None:
            clock, timeline = run.clock, run.timeline.to_dict("records")
    try:
        return report.generate_trace(args.trace, args.out or args.trace.rstrip("/") + ".report", clock, timeline,
                                      args.long_wait_threshold)
    except (ValueError, FileNotFoundError) as e:
        raise ContractError(str(e) if str(e).startswith(f"{args.trace}: ") else f"{args.trace}: {e}") from e


def main(argv=None) -> int:
    p = parser()
    args = p.parse_args(argv)
    opts = Options(args.long_wait_threshold, args.confidence, args.baseline)
    try:
        if args.trace is not None:
            paths = trace_report(args)
        elif args.compare is not None:
            if len(args.compare) < 2:
                p.error("--compare needs at least two results directories")
            runs = [reader.load_run(d) for d in args.compare]
            out = args.out or os.path.join(os.path.dirname(os.path.abspath(args.compare[0])),
                                           f"compare-{runs[0].run_id}-vs-{runs[1].run_id}")
            paths = compare.generate(runs, out, opts)
        else:
            with progress.stage(f"read {args.results}"):
                run = reader.load_run(args.results)
            if args.baseline and args.baseline not in run.phases:
                p.error(f"--baseline {args.baseline}: no such phase (phases: {', '.join(run.phases)})")
            paths = report.generate(run, args.out or args.results, opts)
    except ContractError as e:
        print(f"spinlab-report: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"spinlab-report: cannot write the report: {e}", file=sys.stderr)
        return 2
    print(os.path.abspath(paths["html"]))
    if args.trace is not None:
        return 0
    # The list of every run sits beside the runs: refreshed when the report lands in its run (or
    # the default compare) directory, which is one entry of results/; not for an --out elsewhere.
    if not args.out:
        out_dir = os.path.realpath(os.path.dirname(paths["html"]))
        try:
            print(f"spinlab-report: every run: {index.write(os.path.dirname(out_dir))}", file=sys.stderr)
        except OSError as e:
            print(f"spinlab-report: cannot write {index.INDEX} beside {out_dir}: {e}", file=sys.stderr)
    return 0

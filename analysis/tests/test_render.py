"""Figures are real images and the HTML embeds every figure the report references."""
import base64
import glob
import io
import os
import re

import matplotlib.image as mpimg
import numpy as np

FIGURES = ["wait_ccdf", "wait_cdf", "wait_cdf_phases", "wait_hist", "hold_cdf", "class_waits", "cpu_heatmap",
           "holder_off_scatter", "long_wait_window", "throughput"]


def test_every_figure_is_a_non_blank_png_and_an_svg(basic_report):
    out, _ = basic_report
    for name in FIGURES:
        img = mpimg.imread(os.path.join(out, "figures", name + ".png"))
        h, w = img.shape[:2]
        assert w >= 400 and h >= 250, name
        rgb = img[..., :3]
        assert (rgb < 0.9).mean() > 0.01, f"{name}: almost blank"
        assert len(np.unique(rgb.reshape(-1, 3), axis=0)) > 20, f"{name}: too few colours to be a plot"
        svg = open(os.path.join(out, "figures", name + ".svg")).read()
        assert svg.lstrip().startswith("<?xml") and "<svg" in svg


def test_html_embeds_every_figure_it_references(basic_report):
    out, paths = basic_report
    html = open(paths["html"]).read()
    srcs = re.findall(r'<img [^>]*src="([^"]+)"', html)
    ids = re.findall(r'<figure id="([^"]+)"', html)
    assert sorted(ids) == sorted(FIGURES)
    assert len(srcs) == len(FIGURES)
    for src in srcs:
        assert src.startswith("data:image/png;base64,")
        data = base64.b64decode(src.split(",", 1)[1])
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert mpimg.imread(io.BytesIO(data), format="png").shape[0] > 100
    assert not re.search(r'(src|href)="(?!data:|#)', html)  # nothing fetched from outside
    md = open(paths["md"]).read()
    for rel in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md):
        assert os.path.exists(os.path.join(out, rel)), rel
    assert len(glob.glob(os.path.join(out, "figures", "*.png"))) == len(FIGURES)


def test_report_reads_top_to_bottom(basic_report):
    _, paths = basic_report
    md = open(paths["md"]).read()
    order = ["# spinlab report: run-basic", "**Verdict.**\n\n- **idle-host (the baseline):",
             "- **host-load: ×16.6 the spin behind a preempted holder", "- In idle-host (the baseline", "## What is missing",
             "## The tail: how long contended waits last", "## Long waits and lock-holder preemption",
             "## The log2 wait table", "## Throughput", "## Lock classes", "## CPUs", "## Hold times",
             "## How the numbers are computed", "## The run", "| git revision | 0123abc |"]
    pos = [md.index(h) for h in order]
    assert pos == sorted(pos)
    assert "| host-load | 7 | 0 | 3 | 3 | 0 | 1 | 50.0% (steal 0, timeline 6) |" in md
    # 6M (holder off 0%), 4.5M (56%), 7M (71%), 5M (100%)
    assert "| host-load | 2^22 | 1 | 0 | 0 | 2 | 0 | 1 |" in md
    assert "| host-load | 550.0 | -85.3 … 1,185.3 | 2 | -47.6% |" in md

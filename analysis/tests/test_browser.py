"""report.html as a reader sees it: opened in headless Chromium (Debian `chromium`).

Two runs of the browser: one loads report.html inside a 1280x900 frame of a probe page and
writes what it finds into the probe's DOM (the verdict's text and position, the verdict table's
position, whether every image decoded), which --dump-dom returns; the other takes a screenshot
of the first screen, kept as a test artifact in build/test-artifacts/report-first-screen.png.
"""
import json
import os
import re
import shutil
import subprocess

import matplotlib.image as mpimg
import numpy as np
import pytest

from test_render import FIGURES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ARTIFACTS = os.path.join(os.environ.get("SPINLAB_BUILD", os.path.join(ROOT, "build")), "test-artifacts")
WIDTH, HEIGHT = 1280, 900
VERDICT_BORDER = (0x1F, 0x77, 0xB4)  # render_html's .verdict border colour

PROBE = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="f" src="%s" style="border:0;width:%dpx;height:%dpx"></iframe><pre id="result">pending</pre>
<script>
document.getElementById("f").addEventListener("load", () => {
  const d = document.getElementById("f").contentDocument;
  const box = e => { if (!e) return null; const r = e.getBoundingClientRect(); return [r.top, r.bottom]; };
  document.getElementById("result").textContent = JSON.stringify({
    verdict: d.getElementById("verdict") ? d.getElementById("verdict").textContent : null,
    verdict_box: box(d.getElementById("verdict")), table_box: box(d.querySelector("table")),
    height: d.defaultView.innerHeight,
    images: [...d.images].map(i => [i.closest("figure") ? i.closest("figure").id : "", i.complete && i.naturalWidth > 0])});
});
</script></body></html>"""


def chromium(*args, timeout=180):
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("chromium is not installed (scripts/deps.sh installs Debian's chromium)")
    return subprocess.run([exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
                          capture_output=True, text=True, timeout=timeout)


def test_verdict_is_on_the_first_screen_and_every_figure_loads(basic_report, tmp_path):
    out, paths = basic_report
    probe = tmp_path / "probe.html"
    probe.write_text(PROBE % ("file://" + os.path.abspath(paths["html"]), WIDTH, HEIGHT))
    p = chromium("--allow-file-access-from-files", "--virtual-time-budget=20000", "--dump-dom", f"file://{probe}")
    m = re.search(r'<pre id="result">(.*?)</pre>', p.stdout, re.S)
    assert m and m.group(1) != "pending", f"the probe did not report: {p.stderr[-2000:]}"
    r = json.loads(m.group(1).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"'))
    assert r["verdict"].startswith("Verdict.idle-host (the baseline): 0 cycles per vCPU-second")
    assert "host-load: ×16.6 the spin behind a preempted holder (95% CI 2.68 … 102), significant." in r["verdict"]
    assert r["height"] == HEIGHT
    assert 0 <= r["verdict_box"][0] and r["verdict_box"][1] <= HEIGHT, r["verdict_box"]
    assert r["table_box"][1] <= HEIGHT, f"the verdict table ends below the first screen: {r['table_box']}"
    assert sorted(i for i, _ in r["images"]) == sorted(FIGURES)
    assert all(ok for _, ok in r["images"]), [i for i, ok in r["images"] if not ok]


def test_first_screen_screenshot(basic_report):
    _, paths = basic_report
    os.makedirs(ARTIFACTS, exist_ok=True)
    shot = os.path.join(ARTIFACTS, "report-first-screen.png")
    if os.path.exists(shot):
        os.remove(shot)
    p = chromium(f"--window-size={WIDTH},{HEIGHT}", f"--screenshot={shot}", "file://" + os.path.abspath(paths["html"]))
    assert os.path.exists(shot), p.stderr[-2000:]
    img = (mpimg.imread(shot)[..., :3] * 255).round().astype(int)
    assert img.shape[:2] == (HEIGHT, WIDTH)
    assert (img.min(axis=2) < 128).mean() > 0.01, "the first screen is almost blank"
    border = np.all(np.abs(img - np.array(VERDICT_BORDER)) <= 2, axis=2)
    assert border.sum() > 50, "the verdict box's border is not on the first screen"

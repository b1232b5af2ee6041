"""What the browser tests share: Debian's Chromium (installed as root when missing, else a skip that says
why), the launch flags, and a `dtsim serve` subprocess on a free port.

The `server` fixture is offered to every test module by tests/conftest.py.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def ensure_chromium() -> str:
    if Path(CHROMIUM).exists():
        return CHROMIUM
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip(
            "the browser test needs Debian's chromium at /usr/bin/chromium (apt-get install chromium, as root)"
        )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, timeout=600, capture_output=True)
    subprocess.run(
        ["apt-get", "install", "-y", "-qq", "chromium"], check=True, env=env, timeout=900, capture_output=True
    )
    assert Path(CHROMIUM).exists(), "apt-get installed chromium but /usr/bin/chromium is missing"
    return CHROMIUM


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(seconds: float = 60) -> tuple[str, subprocess.Popen]:
    """`dtsim serve` on a free loopback port, once it answers: (its URL, its process)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dtsim", "serve", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url + "/api/schema", timeout=2) as resp:
                if resp.status == 200:
                    break
        except OSError:
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail("dtsim serve did not start: " + (proc.stdout.read() if proc.stdout else ""))
    return url, proc


@pytest.fixture(scope="module")
def server():
    url, proc = start_server()
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


# The texts of the page's ECharts (axis names, tick labels, mark labels) drawn past their chart's edge,
# read from each chart's zrender scene (NiceGUI's getElement(id).chart). A text's measured height is
# unreliable in headless Chromium, so a text is taken as tall as its font.
CHART_TEXT_CUT = """() => {
  const out = [];
  for (const div of document.querySelectorAll('[_echarts_instance_]')) {
    const chart = getElement(div.id.replace(/^c/, ''))?.chart;
    const name = div.getAttribute('data-testid') || div.id;
    if (!chart) { out.push(name + ': no chart'); continue; }
    const W = chart.getWidth(), H = chart.getHeight();
    for (const el of chart.getZr().storage.getDisplayList(true)) {
      if (el.type !== 'tspan' || el.ignore || el.invisible || !el.style.text) continue;
      const text = el.parent && el.parent.type === 'text' ? el.parent : el;
      const r = text.getBoundingRect().clone();
      if (text.transform) r.applyTransform(text.transform);
      const size = parseFloat(String(el.style.font || '').match(/(\\d+(?:\\.\\d+)?)px/)?.[1] || 12);
      if (r.height < size) { const cy = r.y + r.height / 2; r.y = cy - size / 2; r.height = size; }
      if (r.x < -1 || r.y < -1 || r.x + r.width > W + 1 || r.y + r.height > H + 1)
        out.push(`${name}: '${el.style.text}' at ${Math.round(r.x)},${Math.round(r.y)} (${W}x${H})`);
    }
  }
  return out;
}"""


def charts_keep_their_text(page, min_charts: int = 1) -> None:
    """Every chart on the page draws its axis titles and labels inside its own area (titles above a y
    axis were cut at the top edge)."""
    page.wait_for_timeout(300)  # the charts' last layout
    assert page.locator("[_echarts_instance_]").count() >= min_charts
    cut = page.evaluate(CHART_TEXT_CUT)
    assert cut == [], cut


# Issue 17 aims at 150 ms from an input change to the numbers in the browser for a single-scenario view.
# The tests measure it and record it (artifacts/web-latency.json, which CI keeps); they fail only past
# LATENCY_GATE_S, a bound for regressions that a shared, loaded CI machine still meets.
LATENCY_AIM_S = 0.15
LATENCY_GATE_S = 0.5


def record_latency(view: str, median_s: float) -> None:
    """Print and record one view's median input-to-answer time in the browser."""
    import json

    print(
        f"{view}: input to answer, median in the browser: {median_s * 1e3:.0f} ms (aim {LATENCY_AIM_S * 1e3:.0f})"
    )
    path = Path(__file__).resolve().parents[1] / "artifacts" / "web-latency.json"
    path.parent.mkdir(exist_ok=True)
    try:
        seen = json.loads(path.read_text())
    except (OSError, ValueError):
        seen = {}
    seen[view] = {"median_ms": round(median_s * 1e3, 1), "aim_ms": LATENCY_AIM_S * 1e3}
    path.write_text(json.dumps(seen, indent=1, sort_keys=True))

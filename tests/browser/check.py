#!/usr/bin/env python3
"""Load an `icl repro` report.html in headless Chromium and check that

  * every request the page makes is the report's own file:// URL or a data: URI (anything else is
    recorded, blocked, and fails the check with its URL), and
  * every <figure> renders: its box has a non-zero size and a screenshot clipped to it is not blank
    (enough pixels away from the background colour, enough distinct colours).

Only the Python standard library: Chromium is driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: NUL-terminated JSON on fds 3 and 4), and the screenshots are decoded by a
small PNG reader (zlib + the five row filters).

  check.py REPORT.html [--screenshot PAGE.png]   exit 1 listing every problem
  check.py REPORT.html --self-test [...]          also check a broken copy of REPORT.html (an empty
                                                  figure, a blank figure, an http:// image, a local
                                                  image beside the report) and fail unless the
                                                  checker finds each of the four

CHROMIUM=path picks the browser (default: chromium on PATH).
"""

import argparse
import base64
import collections
import json
import os
import pathlib
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

# A figure is "not blank" when at least this fraction of its pixels differ from its most common
# colour and it has at least this many distinct colours. The smoke-scale zhang2025 figures (800x500
# SVG plots: axes, tick labels, curves) have ~4-10 % foreground and hundreds of colours
# (anti-aliasing); a white or single-colour box has 0 % and 1.
MIN_FOREGROUND = 0.005
MIN_COLOURS = 8

VIEWPORT = (1280, 900)
TIMEOUT_S = 60


class Chromium:
    """A headless Chromium with a DevTools session on one page."""

    def __init__(self, profile):
        exe = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
        if not exe:
            sys.exit("check.py: no chromium on PATH (apt-get install chromium, or set CHROMIUM)")
        to_child_r, self.to_child = os.pipe()
        self.from_child, from_child_w = os.pipe()

        def fds():  # in the child: the protocol pipe on fds 3 (commands in) and 4 (replies out)
            a, b = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.log = open(os.path.join(profile, "chromium.log"), "wb")
        self.proc = subprocess.Popen(
            [
                exe,
                "--headless",
                "--remote-debugging-pipe",
                "--no-sandbox",  # CI runs as root
                f"--user-data-dir={profile}",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-gpu",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                "--mute-audio",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
            preexec_fn=fds,
            pass_fds=(3, 4),
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.on_paused = None
        self.session = None
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]

    def send(self, method, params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if self.session:
            msg["sessionId"] = self.session
        os.write(self.to_child, json.dumps(msg).encode() + b"\0")
        return self.next_id

    def read(self, deadline):
        """The next message from the browser (None at the deadline)."""
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.from_child], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.from_child, 1 << 20)
            if not chunk:
                self.fail_exited()
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def fail_exited(self):
        self.log.flush()
        tail = pathlib.Path(self.log.name).read_bytes()[-4000:].decode(errors="replace")
        sys.exit(f"check.py: chromium closed the protocol pipe (exit {self.proc.poll()}); its log:\n{tail}")

    def call(self, method, **params):
        """Send a command and wait for its reply; events that arrive meanwhile are queued."""
        want = self.send(method, params)
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            msg = self.read(deadline)
            if msg is None:
                sys.exit(f"check.py: no reply to {method} in {TIMEOUT_S} s")
            if msg.get("id") == want:
                if "error" in msg:
                    sys.exit(f"check.py: {method} failed: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.event(msg)

    def event(self, msg):
        """Answer paused requests at once (a navigation waits on them); queue the rest."""
        if msg["method"] == "Fetch.requestPaused" and self.on_paused:
            self.on_paused(msg["params"])
        self.events.append(msg)

    def pump(self, until, seconds):
        """Handle events until `until(event)` is true or `seconds` pass."""
        deadline = time.monotonic() + seconds
        while True:
            while self.events:
                ev = self.events.pop(0)
                if until(ev):
                    return True
            msg = self.read(deadline)
            if msg is None:
                return False
            if "method" in msg:
                self.event(msg)

    def close(self):
        try:
            self.send("Browser.close", {})
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_child)
        os.close(self.from_child)
        self.log.close()


def allowed(url, own):
    return url == own or url.startswith("data:") or url == "about:blank"


def load(chrome, path):
    """Open `path`, recording (and blocking) every request that is not the report itself.
    Returns the URLs of the requests that were not allowed."""
    own = pathlib.Path(path).resolve().as_uri()
    seen = []

    def on_paused(p):
        url = p["request"]["url"]
        seen.append(url)
        if allowed(url, own):
            chrome.send("Fetch.continueRequest", {"requestId": p["requestId"]})
        else:
            chrome.send("Fetch.failRequest", {"requestId": p["requestId"], "errorReason": "BlockedByClient"})

    def on_event(ev):
        if ev["method"] == "Network.requestWillBeSent":
            seen.append(ev["params"]["request"]["url"])
        return ev["method"] == "Page.loadEventFired"

    chrome.events.clear()
    chrome.on_paused = on_paused

    chrome.call("Page.enable")
    chrome.call("Network.enable")
    chrome.call("Fetch.enable", patterns=[{"urlPattern": "*"}])
    w, h = VIEWPORT
    chrome.call("Emulation.setDeviceMetricsOverride", width=w, height=h, deviceScaleFactor=1, mobile=False)
    nav = chrome.call("Page.navigate", url=own)
    if nav.get("errorText"):
        sys.exit(f"check.py: could not open {own}: {nav['errorText']}")
    if not chrome.pump(on_event, TIMEOUT_S):
        sys.exit(f"check.py: {own} did not finish loading in {TIMEOUT_S} s")
    # late requests (lazy images, fonts): give them a moment, then stop listening
    chrome.pump(lambda ev: on_event(ev) and False, 0.5)
    chrome.call("Fetch.disable")
    chrome.on_paused = None
    return sorted({u for u in seen if not allowed(u, own)})


def png_pixels(data):
    """(width, height, rows of RGB(A) bytes) of an 8-bit, non-interlaced RGB or RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, []
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0, f"PNG type {depth}/{colour}/{interlace}"
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + n
    raw = zlib.decompress(b"".join(idat))
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def ink(png):
    """(fraction of pixels that differ from the most common colour, number of distinct colours)."""
    w, h, bpp, rows = png_pixels(png)
    counts = collections.Counter()
    for row in rows:
        counts.update(zip(row[0::bpp], row[1::bpp], row[2::bpp]))  # RGB; alpha ignored
    background = max(counts.values())
    return 1 - background / (w * h), len(counts)


def check(chrome, path, screenshot=None):
    """The problems found in report `path` (empty: it passes)."""
    problems = [f"request to {u} (the report must load nothing but itself)" for u in load(chrome, path)]
    boxes = chrome.call(
        "Runtime.evaluate",
        returnByValue=True,
        expression="""[...document.querySelectorAll('figure')].map((f, i) => {
            const r = f.getBoundingClientRect();
            let run = '';
            for (let e = f; e && !run; e = e.previousElementSibling) if (e.tagName == 'H3') run = e.textContent;
            return {x: r.x + scrollX, y: r.y + scrollY, width: r.width, height: r.height, run};
        })""",
    )["result"]["value"]
    if not boxes:
        problems.append("no <figure> in the page")
    for i, b in enumerate(boxes, 1):
        name = f"figure {i} of {len(boxes)} (after heading {b['run']!r})"
        if b["width"] < 1 or b["height"] < 1:
            problems.append(f"{name}: empty box ({b['width']:.0f} x {b['height']:.0f} px)")
            continue
        shot = chrome.call(
            "Page.captureScreenshot",
            format="png",
            captureBeyondViewport=True,
            clip={"x": b["x"], "y": b["y"], "width": b["width"], "height": b["height"], "scale": 1},
        )
        fg, colours = ink(base64.b64decode(shot["data"]))
        if fg < MIN_FOREGROUND or colours < MIN_COLOURS:
            problems.append(
                f"{name}: blank ({fg:.2%} of its {b['width']:.0f} x {b['height']:.0f} px away from the "
                f"background, {colours} colours; need {MIN_FOREGROUND:.1%} and {MIN_COLOURS})"
            )
        else:
            print(f"  {name}: {b['width']:.0f} x {b['height']:.0f} px, {fg:.1%} ink, {colours} colours")
    if screenshot:
        size = chrome.call(
            "Runtime.evaluate",
            returnByValue=True,
            expression="[document.documentElement.scrollWidth, document.documentElement.scrollHeight]",
        )["result"]["value"]
        shot = chrome.call(
            "Page.captureScreenshot",
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1},
        )
        pathlib.Path(screenshot).write_bytes(base64.b64decode(shot["data"]))
        print(f"  page screenshot ({size[0]} x {size[1]} px): {screenshot}")
    return problems


def broken_copy(path, dest):
    """REPORT.html with its first figure emptied, its second replaced by a blank SVG of the same
    size, an http:// image and an image beside the report added."""
    html = pathlib.Path(path).read_text(encoding="utf-8")
    figs = [m.span() for m in re.finditer(r"<figure>.*?</figure>", html, re.S)]
    assert len(figs) >= 2, "the self-test needs a report with at least two figures"
    (a0, a1), (b0, b1) = figs[0], figs[1]
    blank = '<figure><svg width="800" height="500" xmlns="http://www.w3.org/2000/svg"></svg></figure>'
    html = html[:a0] + "<figure></figure>" + html[a1:b0] + blank + html[b1:]
    html = html.replace(
        "</body>", '<img src="http://example.com/x.png"><img src="figures/not-inline.png"></body>', 1
    )
    pathlib.Path(dest).write_text(html, encoding="utf-8")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("report")
    ap.add_argument("--screenshot", help="save a screenshot of the whole page here")
    ap.add_argument("--self-test", action="store_true", help="also prove the check fails on a broken copy")
    args = ap.parse_args()
    t0 = time.monotonic()
    profile = tempfile.mkdtemp(prefix="icl-chromium-")
    chrome = Chromium(profile)
    try:
        print(f"check.py: {args.report}")
        problems = check(chrome, args.report, args.screenshot)
        if args.self_test:
            bad = os.path.join(os.path.dirname(os.path.abspath(args.report)), "report-broken.html")
            broken_copy(args.report, bad)
            print(f"check.py: self-test on {bad} (must fail four ways)")
            found = check(chrome, bad)
            for p in found:
                print(f"  found: {p}")
            expect = {
                "the emptied figure": lambda p: p.startswith("figure 1 ") and "empty box" in p,
                "the blank figure": lambda p: p.startswith("figure 2 ") and "blank" in p,
                "the http:// image": lambda p: "request to http://example.com/x.png" in p,
                "the image beside the report": lambda p: "figures/not-inline.png" in p,
            }
            for what, hit in expect.items():
                if not any(hit(p) for p in found):
                    problems.append(f"self-test: the checker missed {what} in {bad}")
            if len(found) != len(expect):
                problems.append(f"self-test: expected exactly {len(expect)} problems in {bad}, got {len(found)}")
            os.remove(bad)
    finally:
        chrome.close()
        shutil.rmtree(profile, ignore_errors=True)
    for p in problems:
        print(f"FAIL: {p}", file=sys.stderr)
    print(f"check.py: {'FAIL' if problems else 'ok'} in {time.monotonic() - t0:.1f} s")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

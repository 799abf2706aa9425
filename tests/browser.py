"""Headless Chromium for the HTML report tests: lay a page out at a given width and measure it.

Desktop Chromium will not make its window narrower than 500 px, so the page is loaded into a
``width`` px wide iframe of a wrapper page written beside it. That iframe is the page's layout
viewport, as a phone's screen is once the page has ``<meta name="viewport"
content="width=device-width">``. The test checks that tag by parsing the page. After the load
event, a script in the wrapper measures the page and writes the numbers into a ``<pre>``, and
``--dump-dom`` prints them.
"""

from __future__ import annotations

import html
import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

CHROMIUM = next((c for c in ("chromium", "chromium-browser", "google-chrome") if shutil.which(c)), None)

#: Mark for tests that need the browser (scripts/bootstrap.sh installs Debian's chromium).
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/bootstrap.sh "
                                    "installs it: apt-get install chromium)")

_PROBE = """
window.addEventListener('load', () => {
  const frame = document.getElementById('page'), doc = frame.contentDocument, win = frame.contentWindow;
  const vw = doc.documentElement.clientWidth;
  const wide = [];
  for (const el of doc.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && (r.right > vw + 0.5 || r.left < -0.5)) {
      let p = el.parentElement, clipped = false;  // inside a box that scrolls or clips: fine
      while (p && p !== doc.body) {
        const ox = win.getComputedStyle(p).overflowX;
        if (ox !== 'visible') { clipped = true; break; }
        p = p.parentElement;
      }
      if (!clipped) wide.push(el.tagName.toLowerCase() + ' ' + Math.round(r.left) + '..' + Math.round(r.right));
    }
  }
  const out = {
    viewport_width: vw, inner_width: win.innerWidth,
    scroll_width: doc.documentElement.scrollWidth, scroll_height: doc.documentElement.scrollHeight,
    wide: wide.slice(0, 20),
    text_left: Math.min(...[...doc.querySelectorAll('h1,h2,p')].map(e => e.getBoundingClientRect().left)),
    text_right: Math.max(...[...doc.querySelectorAll('h1,h2,p')].map(e => e.getBoundingClientRect().right)),
    images: [...doc.images].map(i => ({src: i.getAttribute('src'), alt: i.getAttribute('alt'),
                                       complete: i.complete, natural_width: i.naturalWidth,
                                       width: i.getBoundingClientRect().width})),
  };
  const pre = document.createElement('pre');
  pre.id = 'kisekae-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
"""


def _wrapper(page: Path, width: int, height: int) -> Path:
    wrap = page.with_name(f".probe-{width}-{page.name}")
    wrap.write_text(
        "<!doctype html><html><head><meta charset='utf-8'></head><body style='margin:0'>"
        f"<iframe id='page' src='{page.name}' style='width:{width}px;height:{height}px;border:0;display:block'>"
        f"</iframe><script>{_PROBE}</script></body></html>", encoding="utf-8")
    return wrap


def _chromium(args, timeout: float) -> str:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--mute-audio",
           "--no-first-run", "--allow-file-access-from-files", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True).stdout


def probe(page, width: int = 390, height: int = 844, timeout: float = 60.0) -> dict:
    """Lay ``page`` (an HTML file) out ``width`` CSS px wide in headless Chromium and measure it.

    Returns
    -------
    dict
        ``viewport_width``, ``inner_width``, ``scroll_width``, ``scroll_height`` (CSS px);
        ``text_left``, ``text_right``: the outermost edges of headings and paragraphs (CSS px);
        ``wide``: up to 20 elements that stick out of the viewport and are not inside a box that
        scrolls or clips (``"tag left..right"``); ``images``: per ``<img>`` its ``src``, ``alt``,
        ``complete``, ``natural_width`` (0 when broken) and laid-out ``width``.
    """
    page = Path(page).resolve()
    wrap = _wrapper(page, width, height)
    try:
        dom = _chromium(["--virtual-time-budget=10000", "--dump-dom", wrap.as_uri()], timeout)
    finally:
        wrap.unlink()
    start = dom.find("<pre id=\"kisekae-probe\">")
    if start < 0:
        raise AssertionError(f"the probe did not run on {page}; Chromium printed:\n{dom[-2000:]}")
    text = dom[start + len("<pre id=\"kisekae-probe\">"):dom.index("</pre>", start)]
    return json.loads(html.unescape(text))


def screenshot(page, png, width: int = 390, height: int | None = None, timeout: float = 60.0) -> Path:
    """Save a PNG of ``page`` laid out ``width`` px wide, the whole page tall unless ``height`` is given."""
    page = Path(page).resolve()
    if height is None:
        height = int(probe(page, width, timeout=timeout)["scroll_height"])
    wrap = _wrapper(page, width, height)
    try:
        _chromium([f"--window-size={max(width, 500)},{height}", "--virtual-time-budget=10000",
                   f"--screenshot={Path(png).resolve()}", wrap.as_uri()], timeout)
    finally:
        wrap.unlink()
    return Path(png)


class _Page(HTMLParser):
    """The ``<meta>`` tags, ``<img>`` attributes and tables of a page (checks that need no browser)."""

    def __init__(self):
        super().__init__()
        self.meta, self.images, self.tables, self._cell = [], [], [], None
        self._section = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "meta":
            self.meta.append(a)
        elif tag == "img":
            self.images.append(a)
        elif tag == "table":
            self.tables.append({"thead": [], "tbody": [], "tfoot": [], "rows": []})
            self._section = "rows"
        elif tag in ("thead", "tbody", "tfoot") and self.tables:
            self._section = tag
        elif tag == "tr" and self.tables:
            self.tables[-1][self._section or "rows"].append([])
        elif tag in ("td", "th") and self.tables:
            rows = self.tables[-1][self._section or "rows"]
            if rows:
                self._cell = [tag, ""]
                rows[-1].append(self._cell)

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self._cell = None
        elif tag in ("thead", "tbody", "tfoot"):
            self._section = "rows"

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[1] += data


def parse(page) -> _Page:
    """Parse an HTML file: ``.meta`` and ``.images`` (attribute dicts) and ``.tables`` (each a dict of
    ``thead``, ``tbody``, ``tfoot`` and ``rows`` (rows outside those), lists of rows of ``[tag, text]``)."""
    p = _Page()
    p.feed(Path(page).read_text(encoding="utf-8"))
    return p

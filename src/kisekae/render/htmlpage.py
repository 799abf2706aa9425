"""HTML report pages that read on a phone and on a desktop (``kisekae demo``, ``batch report --pictures``).

:func:`html_page` wraps a body in a page with a viewport tag and one style sheet: side margins,
a readable line length on wide screens, tables and pictures that scroll sideways inside their own
box (:func:`scroll_box`) rather than widening the page, and long words (paths) that wrap.
:func:`picture` shows a picture at the page's width, but never narrower than the width at which
its text stays :data:`READABLE_PX` CSS pixels tall; on a phone such a picture scrolls sideways.
"""

from __future__ import annotations

import html
import math

from ..errors import KisekaeError

#: Smallest font size, in CSS pixels, that text inside a picture may be shown at.
READABLE_PX = 12.0

#: Widest page content, CSS pixels (pictures wider than this are scaled down on a desktop).
PAGE_WIDTH = 1200

STYLE = (
    "*,*::before,*::after{box-sizing:border-box}"
    f"body{{font-family:sans-serif;line-height:1.4;max-width:{PAGE_WIDTH}px;margin:0 auto;"
    "padding:0 max(12px,env(safe-area-inset-left)) 24px max(12px,env(safe-area-inset-right));"
    "overflow-wrap:anywhere}"
    "h1{font-size:1.6em}h2{font-size:1.3em;margin-top:1.6em}"
    ".scroll{overflow-x:auto;max-width:100%;-webkit-overflow-scrolling:touch}"
    "table{border-collapse:collapse;margin:.5em 0;overflow-wrap:normal}td,th{border:1px solid #bbb;padding:2px 6px}"
    "th{background:#eee;text-align:left}.num{text-align:right;white-space:nowrap}"
    "tfoot td,tfoot th{font-weight:bold;border-top:2px solid #888}"
    "pre{background:#f4f4f4;padding:8px;overflow-x:auto;overflow-wrap:normal}"
    "img{max-width:100%;height:auto}.pic{margin:.5em 0}.pic img{display:block;width:100%;max-width:none}"
    "figure{margin:.5em 0}figcaption{font-size:.95em}"
)


def html_page(title: str, body: str, *, style: str = "") -> str:
    """A whole HTML document: doctype, charset, viewport tag, :data:`STYLE` plus ``style``, ``body``.

    Parameters
    ----------
    title : str
        Plain text (escaped here).
    body : str
        HTML of the page's body.
    style : str
        Extra CSS rules, after :data:`STYLE`.

    Returns
    -------
    str
    """
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{html.escape(title)}</title><style>{STYLE}{style}</style></head><body>\n"
            f"{body}\n</body></html>\n")


def scroll_box(fragment: str) -> str:
    """Wrap an HTML fragment (a table) in a box that scrolls sideways when it is wider than the page."""
    return f"<div class='scroll'>{fragment}</div>"


def picture(src: str, alt: str, size, *, text_px: float | None = None, link: bool = True) -> str:
    """An ``<img>`` at the page's width that keeps the text inside it readable.

    Parameters
    ----------
    src : str
        The picture's URL, relative to the page.
    alt : str
        What the picture shows, in words (plain text, escaped here).
    size : (int, int)
        The picture's width and height, pixels; it is never shown wider than its width.
    text_px : float, optional
        Height of the smallest font inside the picture, pixels. The picture is then shown at least
        ``width * READABLE_PX / text_px`` CSS pixels wide (scrolling sideways in its box when the
        page is narrower), so its text is never smaller than :data:`READABLE_PX`.
    link : bool
        Link the picture to itself (a tap opens it at full size).

    Returns
    -------
    str
        HTML.
    """
    w, h = (int(v) for v in size)
    if w < 1 or h < 1:
        raise KisekaeError(f"must be positive, got {size!r}", "size")
    style = f"max-width:{w}px"
    if text_px is not None:
        if not text_px > 0:
            raise KisekaeError(f"must be positive, got {text_px!r}", "text_px")
        style += f";min-width:{min(w, math.ceil(w * READABLE_PX / float(text_px)))}px"
    s, a = html.escape(src), html.escape(alt)
    img = f"<img src='{s}' alt='{a}' width='{w}' height='{h}' style='{style}'>"
    if link:
        img = f"<a href='{s}'>{img}</a>"
    return f"<div class='pic scroll'>{img}</div>"

"""Headless OpenGL context creation (moderngl over EGL).

A standalone EGL context has no default framebuffer: everything in :mod:`kisekae.render` draws
into framebuffers it owns. On a machine without a display this runs on Mesa's llvmpipe
(software); on a desktop with a GPU driver exposing EGL it runs on the GPU.
"""

from __future__ import annotations

import threading

from ..errors import KisekaeError

#: Debian packages that provide headless EGL + OpenGL (Mesa).
EGL_PACKAGES = ("libegl1", "libegl-mesa0", "libgl1-mesa-dri")

_INSTALL_HINT = (
    "headless OpenGL through EGL is not available ({why}). Install the Mesa EGL/GL packages: "
    "`sudo apt-get install " + " ".join(EGL_PACKAGES) + "` (Debian/Ubuntu), then retry"
)

#: Lowest OpenGL version the renderer's shaders need (GLSL 3.30).
MIN_GL_VERSION = 330

_lock = threading.Lock()
_shared = None


def create_context(*, backend: str = "egl", require: int = MIN_GL_VERSION, **backend_options):
    """Create a new standalone moderngl context.

    Parameters
    ----------
    backend : str, default ``"egl"``
        glcontext backend. ``"egl"`` works without a display (llvmpipe in CI, the GPU on a desktop).
    require : int, default 330
        Minimum OpenGL version (``330`` = 3.3 core).
    **backend_options
        Passed to glcontext, e.g. ``libegl="libEGL.so.1"``, ``libgl="libGL.so.1"``, ``device_index=0``.

    Returns
    -------
    moderngl.Context

    Raises
    ------
    KisekaeError
        If moderngl, libEGL or a GL driver is missing; the message names the Debian packages
        to install instead of showing a traceback.
    """
    try:
        import moderngl
    except ImportError as exc:  # pragma: no cover - moderngl is a hard dependency
        raise KisekaeError(_INSTALL_HINT.format(why=f"python package moderngl missing: {exc}"), "render") from None
    try:
        ctx = moderngl.create_context(standalone=True, backend=backend, require=require, **backend_options)
    except Exception as exc:  # glcontext raises plain Exception/OSError/ImportError
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise KisekaeError(_INSTALL_HINT.format(why=why), "render") from None
    return ctx


def shared_context():
    """Return one process-wide context, created on first use.

    It is the shader core's executor context (:func:`kisekae.shaders.execute.gl_context`, OpenGL 4.3, as
    Mesa's llvmpipe offers) when that one can be made, so that one process has one context: moderngl does not
    make a standalone context current before each call, and a draw issued while another context is current
    crashes the driver. Where OpenGL 4.3 is missing, a context of its own (:func:`create_context`, 3.3).
    """
    global _shared
    with _lock:
        if _shared is None:
            from ..shaders.execute import gl_context

            try:
                _shared = gl_context()
            except KisekaeError:
                _shared = create_context()
        return _shared


def gl_info(ctx=None) -> dict:
    """Renderer, vendor, version and MSAA limit of a context (the shared one by default)."""
    ctx = ctx or shared_context()
    info = ctx.info
    return {
        "renderer": info.get("GL_RENDERER", "?"),
        "vendor": info.get("GL_VENDOR", "?"),
        "version": info.get("GL_VERSION", "?"),
        "max_samples": int(ctx.max_samples),
        "software": "llvmpipe" in str(info.get("GL_RENDERER", "")).lower()
        or "softpipe" in str(info.get("GL_RENDERER", "")).lower(),
    }

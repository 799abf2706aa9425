"""Offscreen rendering (moderngl over EGL): images, id/depth buffers, poke-through pixels, sheets.

Public API
----------
- :class:`Renderer`, :func:`draw`, :class:`DrawItem`, :class:`Frame`
- :class:`Camera`, :func:`named_camera`, :func:`fit_camera`, :data:`VIEWS`, :data:`ALL_VIEWS`, :data:`RESOLUTIONS`
- :mod:`kisekae.render.materials`: :class:`Material`, :data:`PRESETS` (``anime``, ``realistic``)
- :func:`create_context` (clear error naming the Debian packages when EGL/GL is missing)
"""

from . import materials
from .camera import ALL_VIEWS, RESOLUTIONS, VIEWS, Camera, fit_camera, named_camera, resolution
from .context import EGL_PACKAGES, create_context, gl_info, shared_context
from .materials import PRESETS, Material, Preset
from .renderer import DrawItem, Frame, Renderer, default_renderer, draw

__all__ = [
    "ALL_VIEWS", "Camera", "DrawItem", "EGL_PACKAGES", "Frame", "Material", "PRESETS", "Preset", "RESOLUTIONS",
    "Renderer",
    "VIEWS", "create_context", "default_renderer", "draw", "fit_camera", "gl_info", "materials", "named_camera",
    "resolution", "shared_context",
]

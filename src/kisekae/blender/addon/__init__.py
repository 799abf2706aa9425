"""The Blender add-on: registers the settings, operators and panels (needs ``bpy``).

The extension's own ``__init__.py`` (written by :mod:`kisekae.blender.build`) imports
:func:`register` and :func:`unregister` from here.
"""

from __future__ import annotations

from . import fix_ops, panels, props, tension_ops

_MODULES = (props, tension_ops, fix_ops, panels)


def register():
    for m in _MODULES:
        m.register()


def unregister():
    for m in reversed(_MODULES):
        m.unregister()

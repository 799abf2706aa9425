"""kisekae inside Blender: the extension (tension, fix clipping, check) and its builder.

The package sits on top of kisekae, beside :mod:`kisekae.cli`. Only :mod:`kisekae.blender.addon`
imports ``bpy``; the other modules (the frame conversion, the PC2 cache writer, the
array-level operations and the extension builder) are plain NumPy and run without Blender. See
``docs/blender.md``.
"""

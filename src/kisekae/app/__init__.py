"""Applications on top of the library: the demo report (``kisekae demo``: ``demo`` runs the sections
of ``report`` and ``shapes_report``), the interactive preview (``kisekae preview``) and the wound
morph preview pictures.

Everything here may use every other package; nothing below imports it (only :mod:`kisekae.cli`).
"""

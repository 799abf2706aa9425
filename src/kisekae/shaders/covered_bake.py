"""Covered-skin culling for an engine: the body triangles not to draw while a garment is worn.

:func:`kisekae.fit.runtime.covered_skin_triangles` finds the body triangles hidden under a garment in every
verification pose (and, for fabric that follows its skin, under it at rest). An engine leaves them out of the
body's index buffer while the garment is worn: nothing to compute per frame, and no skin left to poke through.

``kisekae fit -o DIR`` writes ``DIR/<garment>.covered.json``, one compact JSON document per garment:

- ``format`` (``"kisekae-covered-skin"``), ``version`` (1), ``garment`` (its name);
- ``bodyVertices``, ``bodyTriangles``: the body it was baked for (the engine refuses another mesh);
- ``triangles``: the culled triangle ids, ascending, no duplicates. A triangle id is the row of the body's
  triangle list in kisekae's order: the triangle primitives of the body's glTF mesh one after the other, in
  primitive order, each in its index order (a kisekae-exported body is one primitive). Unity importers make a
  submesh per primitive in the same order, so id ``t`` is triangle ``t - offset`` of the submesh whose triangles
  start at ``offset`` (docs/engine-integration.md, "Covered-skin culling").

The built-in tights cull 10,877 of the body's 26,756 triangles (62,038 bytes of JSON), the skirt 889 (inside them).
:func:`load_covered` reads a document back, checks it against the body and names the file in every refusal.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ..errors import KisekaeError, quote_name

#: Version of the document.
COVERED_BAKE_VERSION = 1
#: ``format`` of the document.
COVERED_BAKE_FORMAT = "kisekae-covered-skin"


def covered_bake(mask, garment_name: str, n_body_vertices: int) -> dict:
    """The covered-skin document of one garment.

    Parameters
    ----------
    mask : (F,) bool, body triangles hidden under the garment
        (:func:`kisekae.fit.runtime.covered_skin_triangles`)
    garment_name : str
    n_body_vertices : int, vertices of the body (the engine checks its mesh against it)

    Returns
    -------
    dict with ``format``, ``version``, ``garment``, ``bodyVertices``, ``bodyTriangles`` and ``triangles`` (sorted
    int ids); :func:`write_covered` writes it, :func:`load_covered` reads it back.
    """
    m = np.asarray(mask)
    if m.ndim != 1 or m.dtype != bool:
        raise KisekaeError(f"expected a (F,) bool mask, got {m.dtype} of shape {m.shape}", "covered triangles")
    nb = int(n_body_vertices)
    if nb < 0:
        raise KisekaeError(f"must be >= 0, got {n_body_vertices!r}", "n_body_vertices")
    return {"format": COVERED_BAKE_FORMAT, "version": COVERED_BAKE_VERSION, "garment": str(garment_name),
            "bodyVertices": nb, "bodyTriangles": int(len(m)),
            "triangles": [int(t) for t in np.flatnonzero(m)]}


def covered_bake_path(folder, garment_name: str) -> Path:
    """The path ``kisekae fit`` writes a garment's document to in ``folder``."""
    safe = garment_name.replace(":", "_").replace("/", "_").replace("\\", "_")
    return Path(folder) / f"{safe}.covered.json"


def write_covered(doc: dict, path) -> Path:
    """Write the document as compact JSON (the ids on one line); returns the path."""
    path = Path(path)
    path.write_text(json.dumps(doc, separators=(",", ":")))
    return path


def _shown(value) -> str:
    """A value read from a file, for a message: an integer as it is, anything else by :func:`quote_name`."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return repr(int(value)) if abs(int(value)) < 10 ** 12 else "a very large integer"
    return quote_name(value)


def _read(path_or_doc):
    """``(document, source for errors)`` of a path or a document."""
    if isinstance(path_or_doc, dict):
        return path_or_doc, "covered-skin bake"
    source = Path(path_or_doc)
    if not source.is_file():
        raise KisekaeError("covered-skin bake not found", source)
    try:
        doc = json.loads(source.read_text())
    except (OSError, ValueError) as exc:  # ValueError: JSONDecodeError, bad UTF-8, a huge integer
        raise KisekaeError(f"not a JSON covered-skin bake ({exc})", source) from None
    if not isinstance(doc, dict):
        raise KisekaeError("not a JSON covered-skin bake (not an object)", source)
    return doc, source


def _count(doc: dict, key: str, source) -> int:
    value = doc.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise KisekaeError(f"{key!r} must be a non-negative integer, got {_shown(value)}", source)
    return int(value)


def _triangle_ids(values, n_triangles: int, source) -> np.ndarray:
    """The ``triangles`` list as ascending int64 ids below ``n_triangles``, or a KisekaeError."""
    if not isinstance(values, list):
        raise KisekaeError(f"'triangles' must be a list of triangle ids, got {_shown(values)}", source)
    bad = next((i for i, v in enumerate(values) if isinstance(v, bool) or not isinstance(v, (int, np.integer))), None)
    if bad is not None:
        raise KisekaeError(f"'triangles' holds a value that is not an integer (entry {bad}: {_shown(values[bad])})",
                           source)
    where = next((i for i, v in enumerate(values) if not 0 <= v < n_triangles), None)
    if where is not None:
        raise KisekaeError(f"triangle id {_shown(values[where])} (entry {where}) is outside 0..{n_triangles - 1}",
                           source)
    ids = np.array(values, dtype=np.int64).reshape(-1)
    step = np.diff(ids)
    if np.any(step == 0):
        raise KisekaeError(f"triangle id {int(ids[1:][step == 0][0])} is listed twice", source)
    if np.any(step < 0):
        raise KisekaeError(f"triangle ids are not ascending (entry {int(np.flatnonzero(step < 0)[0]) + 1})", source)
    return ids


def load_covered(path_or_doc, n_body_triangles: int, n_body_vertices: int | None = None) -> dict:
    """Read and check a covered-skin document: a ``.covered.json`` path or a document as :func:`covered_bake` returns.

    Parameters
    ----------
    path_or_doc : str, os.PathLike or dict
    n_body_triangles : int, triangles of the body it must fit
    n_body_vertices : int, optional, vertices of that body (checked when given)

    Returns
    -------
    dict with ``version``, ``garment``, ``n_body_vertices``, ``n_body_triangles``, ``triangles`` (sorted int64 ids)
    and ``mask`` ((F,) bool, as :func:`kisekae.fit.runtime.covered_skin_triangles` returns it).

    Raises
    ------
    KisekaeError
        Naming the file (or ``covered-skin bake`` for a document): a missing or unreadable file, another format or
        version, counts that are missing, not integers or other than the body's, ids that are not integers, out of
        range, listed twice or not ascending.
    """
    doc, source = _read(path_or_doc)
    if doc.get("format") != COVERED_BAKE_FORMAT or doc.get("version") != COVERED_BAKE_VERSION:
        raise KisekaeError(f"not a version-{COVERED_BAKE_VERSION} kisekae covered-skin bake (format "
                           f"{_shown(doc.get('format'))}, version {_shown(doc.get('version'))}; write it again with "
                           "kisekae fit)", source)
    nt, nv = _count(doc, "bodyTriangles", source), _count(doc, "bodyVertices", source)
    if nt != int(n_body_triangles):
        raise KisekaeError(f"baked for a body of {nt} triangles, the body has {int(n_body_triangles)}", source)
    if n_body_vertices is not None and nv != int(n_body_vertices):
        raise KisekaeError(f"baked for a body of {nv} vertices, the body has {int(n_body_vertices)}", source)
    garment = doc.get("garment")
    if not isinstance(garment, str):
        raise KisekaeError(f"'garment' must be the garment's name, got {_shown(garment)}", source)
    ids = _triangle_ids(doc.get("triangles"), nt, source)
    mask = np.zeros(nt, dtype=bool)
    mask[ids] = True
    return {"version": COVERED_BAKE_VERSION, "garment": garment, "n_body_vertices": nv, "n_body_triangles": nt,
            "triangles": ids, "mask": mask}

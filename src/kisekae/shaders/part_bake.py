"""The part contact's data for an engine: what ``KisekaePartDepth``, ``KisekaePairFade`` and ``KisekaePartStep``
need, and the body's one-ring for the ``KisekaeSmoothPush`` passes between the two steps.

The part contact (:mod:`kisekae.avatar.part_contact`) has two kinds of data:

- **static**: each part's grid (its bone, by name; the rest-frame corner ``lo``, ``dims``, its ``cell``, the first
  row ``start`` of its samples and its vertices' largest move ``reach``) and the samples themselves, four float32 each (signed distance in metres, then its
  gradient); per body vertex its part (int32, -1: it does not move), its 64-bit skip mask (two uint32, low word
  first) and its rest position (three float32); the body's welded one-ring (``ringPtr`` N + 1 and ``ring`` uint32);
  the body's triangles (``triangles``, 3 uint32 each) and the triangles around each welded vertex (``facePtr`` N + 1
  and ``faces``), which the flip guard reads (``KisekaePartGuard``, :mod:`kisekae.avatar.flip_guard`);
- **per frame**: the first three rows of the inverse of each part bone's skinning matrix ``M = boneToWorld ·
  bindpose``, which the engine computes (``KISEKAE_LOAD_PART_INVERSE``).

:func:`part_bake` writes the static data as a JSON header and a little-endian blob (``kisekae fit`` saves them as
``body_parts.json`` and ``body_parts.bytes``); :func:`part_from_bake` reads them back into the
:class:`~kisekae.avatar.part_contact.PartFields` the reference takes, with clear errors for a malformed bake.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..avatar.part_contact import MIN_SPREAD, REST_SLACK, PartContact, PartFields
from ..errors import KisekaeError
from .corrective_bake import pack_blob, unpack_blob

#: Version of the bake document.
BAKE_VERSION = 2  # 2: the triangles and the faces around each vertex (the flip guard)
#: Largest blob read back (bytes).
MAX_BYTES = 1 << 30
#: Arrays of the blob, in order, with their little-endian types.
LAYOUT = (("samples", "<f4"), ("vertexPart", "<i4"), ("vertexSkip", "<u4"), ("vertexRest", "<f4"),
          ("ringPtr", "<u4"), ("ring", "<u4"), ("triangles", "<u4"), ("facePtr", "<u4"), ("faces", "<u4"))


def part_bake_paths(out) -> tuple:
    """``(out/body_parts.json, out/body_parts.bytes)``."""
    out = Path(out)
    return out / "body_parts.json", out / "body_parts.bytes"


def part_bake(step: PartContact, bone_names) -> tuple:
    """The document and blob of a body's part contact.

    Parameters
    ----------
    step : PartContact
        The body's step (``avatar.body.deform`` of the command line's contact body, or ``with_part_contact()``).
    bone_names : sequence of str, in skeleton order (the glue finds the parts' bones by name)

    Returns
    -------
    (dict, bytes): JSON-ready document with ``version``, ``settings`` (``gap``, ``band``, ``deep``, ``minSpread``,
    ``restSlack`` in metres, ``passes``), ``cell`` (the coarse cell), ``vertexCount``, ``parts`` (list of ``{bone, lo,
    dims, start, reach, cell}``) and ``layout`` (byte offset and count of each array of :data:`LAYOUT`), and the blob.
    """
    if not isinstance(step, PartContact):
        raise KisekaeError(f"need the body's PartContact, got {type(step).__name__}", "part contact bake")
    step.check()
    f = step.fields
    names = list(bone_names)
    if int(np.max(f.bone, initial=-1)) >= len(names):
        raise KisekaeError(f"a part's bone is past the {len(names)} bone names", "part contact bake")
    skip = f.skip.astype(np.uint64)
    ptr, idx = f.ring
    n = len(f.rest)
    tris = np.zeros((0, 3)) if f.faces is None else f.faces  # no faces: no guard (an empty table)
    fptr, fidx = (np.zeros(n + 1), np.zeros(0)) if f.faces is None else f.vertex_faces
    arrays = [np.ascontiguousarray(f.grid, "<f4"), np.ascontiguousarray(f.part, "<i4"),
              np.stack([skip & np.uint64(0xFFFFFFFF), skip >> np.uint64(32)], axis=1).astype("<u4"),
              np.ascontiguousarray(f.rest, "<f4"), np.ascontiguousarray(ptr, "<u4"), np.ascontiguousarray(idx, "<u4"),
              np.ascontiguousarray(tris, "<u4"), np.ascontiguousarray(fptr, "<u4"), np.ascontiguousarray(fidx, "<u4")]
    layout, blob = pack_blob((key, a) for (key, _), a in zip(LAYOUT, arrays))
    parts = [{"bone": names[int(b)], "lo": f.lo[s].tolist(), "dims": f.dims[s].tolist(), "start": int(f.start[s]),
              "reach": float(f.reach[s]), "cell": float(f.part_cell[s])} for s, b in enumerate(f.bone)]
    doc = {"version": BAKE_VERSION, "cell": float(f.cell), "vertexCount": int(len(f.rest)), "parts": parts,
           "settings": {"gap": step.gap, "band": step.band, "deep": step.deep, "minSpread": MIN_SPREAD,
                        "restSlack": REST_SLACK, "passes": int(step.passes)},
           "layout": layout}
    return doc, blob


def _header(doc: dict, bone_names, source: str) -> tuple:
    """The header's entries: ``(n, cell, bone, lo, dims, start, samples per part, reach, settings, part cells)``."""
    index = {name: i for i, name in enumerate(bone_names)}
    try:
        n, cell, parts = int(doc["vertexCount"]), float(doc["cell"]), doc["parts"]
        bone = np.array([index[p["bone"]] for p in parts], dtype=np.int64)
        lo = np.array([p["lo"] for p in parts], dtype=np.float64).reshape(-1, 3)
        dims = np.array([p["dims"] for p in parts], dtype=np.int64).reshape(-1, 3)
        start = np.array([p["start"] for p in parts], dtype=np.int64)
        reach = np.array([p["reach"] for p in parts], dtype=np.float64)
        part_cell = np.array([p["cell"] for p in parts], dtype=np.float64)
        settings = {k: float(doc["settings"][k]) for k in ("gap", "band", "deep")}
        settings["passes"] = int(doc["settings"]["passes"])
    except KeyError as exc:
        raise KisekaeError(f"missing or unknown entry {exc}", source) from None
    except (TypeError, ValueError) as exc:
        raise KisekaeError(f"malformed entries ({exc})", source) from None
    count = np.prod(dims, axis=1) if len(dims) else np.zeros(0, np.int64)
    if len(parts) > 64 or not (np.isfinite(cell) and cell > 0) or not np.all(np.isfinite(part_cell) & (part_cell > 0)) \
            or np.any(dims < 2) or not np.all(np.isfinite(lo)) \
            or np.any(start != np.concatenate([[0], np.cumsum(count)[:-1]])) or n < 0:
        raise KisekaeError("parts: at most 64, a cell > 0, grids of at least 2 samples a side laid end to end", source)
    if not (np.all(np.isfinite(reach)) and np.all(reach >= 0)):
        raise KisekaeError("parts: each reach must be a finite number of metres >= 0", source)
    return n, cell, bone, lo, dims, start, count, reach, settings, part_cell


def _check_csr(ptr, idx, limit: int) -> bool:
    """Whether ``ptr`` runs from 0 to ``len(idx)`` without decreasing and every entry lies in ``0..limit - 1``."""
    return ptr[0] == 0 and not np.any(np.diff(ptr) < 0) and ptr[-1] == len(idx) and not np.any(idx >= limit)


def _check_ids(part, ptr, ring, n_parts: int, n: int, source: str) -> None:
    if np.any(part < -1) or np.any(part >= n_parts) or not _check_csr(ptr, ring, n):
        raise KisekaeError("vertex parts or the one-ring out of range", source)


def part_from_bake(doc: dict, blob: bytes, bone_names, source: str = "body parts bake") -> tuple:
    """Read a bake back: ``(PartFields, settings dict)``.

    Raises
    ------
    KisekaeError
        For another version, missing or malformed entries, unknown bones, a blob of the wrong size, parts whose
        grids do not fit the samples, or ids out of range.
    """
    if not isinstance(doc, dict) or doc.get("version") != BAKE_VERSION:
        got = doc.get("version") if isinstance(doc, dict) else None
        raise KisekaeError(f"not a version-{BAKE_VERSION} body parts bake (version {got!r})", source)
    if len(blob) > MAX_BYTES:
        raise KisekaeError(f"blob larger than {MAX_BYTES} bytes", source)
    n, cell, bone, lo, dims, start, count, reach, settings, part_cell = _header(doc, bone_names, source)
    a = unpack_blob(doc.get("layout"), blob, LAYOUT, {"samples": 4 * int(count.sum()), "vertexPart": n,
                                                      "vertexSkip": 2 * n, "vertexRest": 3 * n, "ringPtr": n + 1,
                                                      "facePtr": n + 1}, source)
    part = a["vertexPart"].astype(np.int64)
    ptr = a["ringPtr"].astype(np.int64)
    ring = a["ring"].astype(np.int64)
    _check_ids(part, ptr, ring, len(bone), n, source)
    tris = a["triangles"].astype(np.int64)
    if len(tris) % 3 or np.any(tris >= n) or not _check_csr(a["facePtr"].astype(np.int64),
                                                            a["faces"].astype(np.int64), len(tris) // 3):
        raise KisekaeError("triangles or the faces around each vertex out of range", source)
    tris = tris.reshape(-1, 3)
    skip = a["vertexSkip"].reshape(n, 2).astype(np.uint64)
    fields = PartFields(grid=a["samples"].reshape(-1, 4).astype(np.float64), start=np.r_[start, count.sum()],
                        lo=lo, dims=dims, bone=bone, cell=cell, part_cell=part_cell,
                        rest=a["vertexRest"].reshape(n, 3).astype(np.float64), part=part,
                        own_bone=np.where(part >= 0, bone[np.clip(part, 0, None)] if len(bone) else 0, 0),
                        skip=skip[:, 0] | (skip[:, 1] << np.uint64(32)), ring=(ptr, ring), reach=reach,
                        faces=tris if len(tris) else None,
                        vertex_faces=(a["facePtr"].astype(np.int64), a["faces"].astype(np.int64)) if len(tris) else None)
    if not np.all(np.isfinite(fields.grid)) or not np.all(np.isfinite(fields.rest)):
        raise KisekaeError("non-finite samples or rest positions", source)
    return fields, settings

"""The surface push's data for an engine: what ``KisekaeSurfacePush``, ``KisekaeSmoothPush`` and ``KisekaeStretchLimit``
read per garment.

The per-frame garment correction of :mod:`kisekae.fit.surface` needs, per garment vertex, its ``K`` candidate
body triangles, its chord (the longest rest edge, for the chord allowance) and, for the smoothing and stretch-limit
passes, the garment's welded one-ring. An engine has the body's skinned
vertex buffer but not necessarily its index buffer in a form a compute pass can read, so the bake stores each
candidate as its three **body vertex ids** (``KISEKAE_LOAD_SURFACE_TRIANGLE(v, k)`` is one load). The document:

- a JSON header (``format``, ``version``, ``garment``, ``vertices``, ``bodyVertices``, ``bodyTriangles``,
  ``candidates`` K, ``ringEntries``, ``smoothPasses``, ``limitPasses`` and ``stretchLimit`` (the stretch limit's
  passes and allowed relative stretch, :data:`kisekae.fit.surface.LIMIT_PASSES` and
  :data:`~kisekae.fit.surface.STRETCH_LIMIT`), ``samples``, ``vertexSampleEntries``, ``liftPasses``,
  ``unflipPasses``, ``turnStart`` and ``liftLimitPasses`` (the edge lift and unflip:
  :data:`kisekae.fit.edge_lift.LIFT_PASSES`, :data:`kisekae.fit.unflip.UNFLIP_PASSES`,
  :data:`~kisekae.fit.unflip.TURN_START`, and the stretch-limit passes after them,
  :data:`kisekae.fit.edge_lift.LIFT_LIMIT_PASSES`), ``followPasses`` (the smoothing passes of the body follow,
  :data:`kisekae.fit.runtime.FOLLOW_SMOOTH`), the binary's file name,
  ``layout`` and ``bytes``);
- a binary file of little-endian uint32 arrays (the last one float32), one after the other, in the order of
  ``layout``:

  ====================  ==============  ===================================================================
  ``corners``           N · K · 3       vertex v's candidate k is ``corners[3 (v K + k) + c]``, c = 0, 1, 2
  ``ringPtr``           N + 1           CSR offsets of the one-ring: v's neighbours are
                                        ``ringIdx[ringPtr[v] .. ringPtr[v + 1])``
  ``ringIdx``           E               neighbour garment vertex ids (a seam copy has its representative's ring)
  ``weld``              N               representative of each vertex (``Mesh.weld``): seam copies share one
                                        position; the engine sums face normals over it, so the copies shade alike
  ``chord``             N               **float32** bits (not an id): each vertex's longest rest edge, metres
                                        (:func:`kisekae.fit.surface.garment_chords`, welded), the L of the
                                        chord allowance ``min(kappa L^2 / 8, 3 mm)`` (``KisekaeSurfacePush``'s
                                        ``chord`` argument)
  ``sampleEnds``        S · 3           sample s blends garment vertices ``sampleEnds[3 s + c]``, c = 0, 1, 2
                                        (:mod:`kisekae.fit.edge_lift`; S = ``samples``: points on the edges over
                                        2 cm and inside the faces over 4 cm, 0 for a garment finer than that)
  ``sampleWeights``     S · 3           **float32**: its barycentric weights, >= 0, summing to 1 (an edge sample
                                        at t: ``(1 - t, t, 0)``; a face sample: all three > 0)
  ``sampleChord``       S               **float32**: the rest spacing of the samples around it (m), the sample's
                                        chord allowance
  ``sampleCorners``     S · K · 3       sample s's candidate k, as ``corners``
                                        (``KISEKAE_LOAD_SAMPLE_TRIANGLE(s, k)``)
  ``vertexSamplePtr``   N + 1           CSR offsets: the samples on vertex v's edges are
                                        ``vertexSampleIdx[vertexSamplePtr[v] .. vertexSamplePtr[v + 1])``
  ``vertexSampleIdx``   M               ``3 s + c``: v is corner c of sample s, with a weight > 0 (a seam copy
                                        has its representative's list; M = ``vertexSampleEntries``)
  ``shortest``          N               **float32**: the stretch limit's floor per vertex, a fraction in [0, 1):
                                        a one-ring edge (v, j) may shrink to ``min(shortest[v], shortest[j])``
                                        times its skinned length (``KISEKAE_LOAD_SHORTEST(v)``;
                                        :func:`kisekae.fit.surface.shortest_lengths`: 0.85 where the cloth clings
                                        to the body at rest, 0 where it is loose and may fold)
  ``followCorners``     N · 3           the body follow's binding (:mod:`kisekae.fit.body_follow`): body vertex
                                        ids of the triangle vertex v is bound to at rest
                                        (``KISEKAE_LOAD_FOLLOW_CORNERS(v)``)
  ``followBary``        N · 3           **float32**: its barycentric weights on them (>= 0, summing to 1)
  ``followShare``       N               **float32**: the share in [0, 1] of the body's outward displacement the
                                        vertex takes (:func:`kisekae.fit.body_follow.follow_weights` of its rest
                                        clearance; all 0: the garment does not follow, as in a layer bake)
  ``depthBound``        Nb              **float32**, one per *body* vertex: the deepest a point inside the body
                                        can lie below the skin there, metres (:mod:`kisekae.fit.depth_bound`:
                                        half the rest thickness plus 5 mm; 1e30: no bound, as in a layer bake);
                                        the push trusts no candidate that puts a vertex deeper behind it
                                        (``KISEKAE_LOAD_BODY_DEPTH_BOUND(i)``)
  ``selfCorners``       N · 4 · 3       the self layers (:mod:`kisekae.fit.self_layers`): garment vertex ids of
                                        vertex v's candidate k on another sheet beneath it, ``selfCorners[3 (4 v
                                        + k) + c]`` (0 where there is none)
  ``selfSide``          N · 4           **float32**: +1 or -1, the side of that triangle's winding plane v keeps
                                        to; 0 after v's last candidate (``KISEKAE_LOAD_SELF_TRIANGLE(v, k)``)
  ``selfGap``           N               **float32**: the clearance v keeps above them, metres
                                        (``KISEKAE_LOAD_SELF_GAP(v)``; all sides 0: a garment of one sheet)
  ====================  ==============  ===================================================================

The chords are baked rather than measured by the engine from its mesh: they are kisekae's own numbers in metres,
whatever scale the engine imported the mesh at. Besides its floor, the stretch limit reads the one-ring, the skinned
garment and the displacements, and compares each edge with its skinned length, which the engine has.

``kisekae fit -o DIR`` writes ``DIR/<garment>.surface.json`` and ``DIR/<garment>.surface.bytes`` (Unity imports a
``.bytes`` file as a binary TextAsset). The built-in tights (2674 vertices, K = 16, 10,650 ring entries): 588,100
bytes of binary (192 B per vertex of candidates, 20 B per vertex of ring, weld and chord) and a 553-byte header; the
same arrays as compact JSON numbers take 816,776 bytes (1.39 times), and an engine would have to parse them.
:func:`load_surface_bake` reads either form (a header with its binary, or a document whose arrays are inline, as
:func:`surface_bake` returns it or as JSON lists) and checks it against the meshes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ..errors import KisekaeError, quote_name
from ..fit.surface import NO_DEPTH_BOUND, as_depth_bound, as_shortest
from ..validate import as_nonnegative

#: Version of the bake document (2: the chords; 3: ``limitPasses`` and ``stretchLimit``, the stretch limit at the end
#: of the frame; 4: the edge samples, ``liftPasses``, ``unflipPasses`` and ``turnStart``, the edge lift and unflip that
#: end the frame; 5: ``liftLimitPasses``, the stretch limit after them; 6: face samples, three corners and weights
#: per sample, ``sampleWeights`` in place of ``sampleT``). Other versions are refused: a version-3 bake was made for
#: an engine without the edge lift, a version-4 one for an engine without the last stretch limit, a version-5 one
#: for an engine whose samples lie on edges only; 7: ``shortest``, the stretch limit's floor per vertex, the
#: compression limit of the cloth that clings to the body; a version-6 bake was made for an engine without it; 8:
#: ``followCorners``, ``followBary``, ``followShare`` and ``followPasses``, the body follow where the push starts; a
#: version-7 bake was made for an engine without it; 9: ``depthBound``, the body's depth bound per body vertex; a
#: version-8 bake was made for an engine that trusts every candidate; 10: ``selfCorners``, ``selfSide`` and
#: ``selfGap``, the garment's self layers; a version-9 bake was made for an engine that lets a lining pass its hem).
SURFACE_BAKE_VERSION = 10
#: ``format`` of the header.
SURFACE_BAKE_FORMAT = "kisekae-surface-bake"
#: Arrays of the binary file, in order (N vertices, K candidates, E ring entries; see :func:`_lengths`).
LAYOUT = ("corners", "ringPtr", "ringIdx", "weld", "chord", "sampleEnds", "sampleWeights", "sampleChord", "sampleCorners",
          "vertexSamplePtr", "vertexSampleIdx", "shortest", "followCorners", "followBary", "followShare", "depthBound",
          "selfCorners", "selfSide", "selfGap")
#: Arrays of float32 values (the others are uint32 ids).
FLOAT_ARRAYS = ("chord", "sampleWeights", "sampleChord", "shortest", "followBary", "followShare", "depthBound",
                "selfSide", "selfGap")
#: Self-layer candidates per garment vertex in the bake (:data:`kisekae.fit.self_layers.SELF_K`,
#: ``KISEKAE_SELF_CANDIDATES``).
SELF_CANDIDATES = 4
_HEADER_COUNTS = ("vertices", "bodyVertices", "bodyTriangles", "candidates", "ringEntries", "smoothPasses",
                  "limitPasses", "samples", "vertexSampleEntries", "liftPasses", "unflipPasses", "liftLimitPasses",
                  "followPasses")


def _lengths(n: int, k: int, e: int, s: int = 0, m: int = 0, nb: int = 0) -> dict:
    return {"corners": n * k * 3, "ringPtr": n + 1, "ringIdx": e, "weld": n, "chord": n, "sampleEnds": 3 * s,
            "sampleWeights": 3 * s, "sampleChord": s, "sampleCorners": s * k * 3, "vertexSamplePtr": n + 1,
            "vertexSampleIdx": m, "shortest": n, "followCorners": 3 * n, "followBary": 3 * n, "followShare": n,
            "depthBound": nb, "selfCorners": 12 * n, "selfSide": 4 * n, "selfGap": n}


def _doc_lengths(doc: dict) -> dict:
    return _lengths(doc["vertices"], doc["candidates"], doc["ringEntries"], doc["samples"], doc["vertexSampleEntries"],
                    doc["bodyVertices"])


def surface_bake(candidates, ring, body_faces, garment_name: str, *, chord, n_body_vertices: int | None = None,
                 weld=None, smooth_passes: int | None = None, limit_passes: int | None = None,
                 stretch_limit: float | None = None, lift=None, lift_passes: int | None = None,
                 unflip_passes: int | None = None, turn_start: float | None = None,
                 lift_limit_passes: int | None = None, shortest=None, follow=None,
                 follow_passes: int | None = None, depth_bound=None, self_layers=None) -> dict:
    """The surface push's data of one garment, as a bake document.

    Parameters
    ----------
    candidates : kisekae.fit.surface.SurfaceCandidates of this garment on this body
    ring : ``(ptr, idx)``, the garment's welded one-ring (:func:`kisekae.fit.surface.one_ring`)
    body_faces : (F, 3) body triangles the candidates index
    garment_name : str
    chord : (N,) the garment's longest rest edge per vertex, metres (:func:`kisekae.fit.surface.garment_chords`);
        stored as float32
    n_body_vertices : int, optional, vertices of the body the engine checks (default ``body_faces.max() + 1``)
    weld : (N,) int, optional, the garment's ``Mesh.weld`` (default: every vertex its own)
    smooth_passes : int, optional, the smoothing passes the engine runs (default
        :data:`kisekae.fit.surface.SMOOTH_PASSES`)
    limit_passes : int, optional, the stretch-limit passes the engine runs after the second push, each followed by
        the push of the vertices it moved (default :data:`kisekae.fit.surface.LIMIT_PASSES`; 0: none)
    stretch_limit : float, optional, the allowed relative stretch of an edge against its skinned length (default
        :data:`kisekae.fit.surface.STRETCH_LIMIT`)
    lift : ``(EdgeSamples, sample SurfaceCandidates, vertex_samples table)`` or None (no samples: edges all
        shorter than the spacing), as :func:`kisekae.fit.runtime.garment_lift` returns it; the samples' candidates
        need as many per sample as the vertices' (K)
    lift_passes, unflip_passes, lift_limit_passes : int, optional, rounds of (edge lift, unflip) after the stretch
        limit, unflips and stretch-limit passes after them (defaults from :mod:`kisekae.fit.edge_lift`)
    turn_start : float, optional, the unflip's :data:`kisekae.fit.unflip.TURN_START`
    shortest : (N,) in [0, 1), optional, the stretch limit's floor (:func:`kisekae.fit.runtime.garment_shortest`; 0)
    follow : ``(corners (N, 3), bary (N, 3), shares (N,))``, optional, the body follow's binding
        (:func:`kisekae.fit.runtime.garment_follow`); default: no follow (every share 0)
    follow_passes : int, optional, the body follow's smoothing passes (default :data:`kisekae.fit.runtime.FOLLOW_SMOOTH`)
    depth_bound : (Nb,), optional, the body's depth bound per body vertex, metres
        (:func:`kisekae.fit.runtime.avatar_depth_bound`; ``inf`` or None: no bound, stored as 1e30)
    self_layers : ``(SelfLayers, faces)``, optional (:func:`kisekae.fit.runtime.garment_self_layers`; None: one sheet)

    Returns
    -------
    dict: the header entries (see the module) and the arrays of :data:`LAYOUT`, flat uint32 ids except those of
    :data:`FLOAT_ARRAYS` (float32; ``depthBound`` one per body vertex). :func:`write_surface_bake` writes it;
    :func:`load_surface_bake` reads it back.

    Raises
    ------
    KisekaeError
        If the candidates were baked on another body or for another vertex count than the ring, or the ring, the weld
        map, the chords or the depth bound are malformed, or ``limit_passes`` is not an integer >= 0 or
        ``stretch_limit`` not a finite number >= 0.
    """
    f = _body_faces(body_faces)
    tri = np.asarray(candidates.triangles)
    n = len(tri)
    candidates.check(n, f, f"surface candidates of {garment_name}")
    ptr, idx = (np.asarray(a, dtype=np.int64) for a in ring)
    nb = int(f.max(initial=-1)) + 1 if n_body_vertices is None else int(n_body_vertices)
    if f.size and f.max() >= nb:
        raise KisekaeError(f"body faces use vertex {int(f.max())} of a body of {nb} vertices", "body faces")
    w = np.arange(n) if weld is None else np.asarray(weld, dtype=np.int64)
    _check_ring(ptr, idx, w, n, f"one-ring of {garment_name}")
    c = as_nonnegative(chord, n, f"chords of {garment_name}")
    settings = _settings(smooth_passes, limit_passes, stretch_limit, lift_passes, unflip_passes, turn_start,
                         lift_limit_passes, follow_passes)
    k = int(tri.shape[1])
    corners = f[tri].astype(np.uint32).ravel()  # (N, K, 3) body vertex ids
    samples = _sample_arrays(lift, f, n, k, int(candidates.n_body_faces), garment_name)
    return {
        "format": SURFACE_BAKE_FORMAT, "version": SURFACE_BAKE_VERSION, "garment": str(garment_name),
        "vertices": n, "bodyVertices": nb, "bodyTriangles": int(candidates.n_body_faces), "candidates": k,
        "ringEntries": int(len(idx)), **settings,
        "corners": corners, "ringPtr": ptr.astype(np.uint32), "ringIdx": idx.astype(np.uint32),
        "weld": w.astype(np.uint32), "chord": c.astype(np.float32),
        "samples": len(samples["sampleChord"]),
        "vertexSampleEntries": len(samples["vertexSampleIdx"]),
        **samples,
        "shortest": (np.zeros(n) if shortest is None else as_shortest(shortest, n)).astype(np.float32),
        **_follow_arrays(follow, n, nb, garment_name),
        "depthBound": as_depth_bound(depth_bound, nb).astype(np.float32),
        **_self_arrays(self_layers, n, garment_name),
    }


def _self_arrays(layers, n: int, garment_name: str) -> dict:
    """``selfCorners`` (N · 4 · 3 garment vertex ids, 0 where there is no candidate), ``selfSide`` (N · 4: +1 or -1,
    0 after a vertex's last candidate) and ``selfGap`` (N, m) of ``(SelfLayers, faces)`` or None."""
    corners = np.zeros((n, SELF_CANDIDATES, 3), dtype=np.uint32)
    side = np.zeros((n, SELF_CANDIDATES), dtype=np.float32)
    gap = np.zeros(n, dtype=np.float32)
    if layers is not None:
        layers, faces = layers
        faces = np.asarray(faces, dtype=np.int64)
        tri = np.asarray(layers.triangles)
        if tri.shape[0] != n or tri.shape[1] > SELF_CANDIDATES:
            raise KisekaeError(f"self layers of {tri.shape[0]} vertices with {tri.shape[1]} candidates, for {n} "
                               f"vertices and at most {SELF_CANDIDATES}", f"self layers of {garment_name}")
        k = tri.shape[1]
        layers.check(n, faces)
        has = tri >= 0
        corners[:, :k][has] = faces[tri[has]]
        side[:, :k][has] = np.asarray(layers.sides)[has]
        gap[:] = layers.gap
    return {"selfCorners": corners.ravel(), "selfSide": side.ravel(), "selfGap": gap}


def _follow_arrays(follow, n: int, nb: int, garment_name: str) -> dict:
    """The body follow's arrays of :func:`surface_bake` (no follow: corner 0 with weight 1 and share 0)."""
    if follow is None:
        bary = np.zeros((n, 3), np.float32)
        bary[:, 0] = 1.0
        return {"followCorners": np.zeros(3 * n, np.uint32), "followBary": bary.ravel(),
                "followShare": np.zeros(n, np.float32)}
    corners, bary, share = (np.asarray(a) for a in follow)
    source = f"body follow of {garment_name}"
    if corners.shape != (n, 3) or bary.shape != (n, 3) or share.shape != (n,):
        raise KisekaeError(f"binding of {corners.shape} corners, {bary.shape} weights and {share.shape} shares for "
                           f"{n} garment vertices", source)
    if corners.size and (corners.min() < 0 or corners.max() >= nb):
        raise KisekaeError(f"binding corners outside the body's {nb} vertices", source)
    bary = np.clip(np.asarray(bary, np.float64), 0.0, None)  # a closest point's weights, rounding below 0 dropped
    if not _barycentric(bary) or not _shares(share):
        raise KisekaeError("binding weights must be barycentric and shares in [0, 1]", source)
    return {"followCorners": corners.astype(np.uint32).ravel(), "followBary": bary.astype(np.float32).ravel(),
            "followShare": np.asarray(share, np.float32)}


def _shares(share) -> bool:
    """True when every share is finite and in [0, 1]."""
    share = np.asarray(share, dtype=np.float64)
    return bool(np.all(np.isfinite(share)) and np.all(share >= 0) and np.all(share <= 1))


def _body_faces(body_faces) -> np.ndarray:
    """(F, 3) int64 body triangles of :func:`surface_bake`, checked."""
    f = np.asarray(body_faces, dtype=np.int64)
    if f.ndim != 2 or f.shape[1] != 3 or (f.size and f.min() < 0):
        raise KisekaeError(f"expected (F, 3) non-negative vertex ids, got shape {f.shape}", "body faces")
    return f


def _settings(smooth_passes, limit_passes, stretch_limit, lift_passes, unflip_passes, turn_start,
              lift_limit_passes=None, follow_passes=None) -> dict:
    """The header's pass counts and numbers of :func:`surface_bake`, kisekae's defaults where None, checked."""
    from ..fit.edge_lift import LIFT_LIMIT_PASSES, LIFT_PASSES
    from ..fit.surface import LIMIT_PASSES, SMOOTH_PASSES, STRETCH_LIMIT
    from ..fit.unflip import TURN_START, UNFLIP_PASSES

    out = {"smoothPasses": int(SMOOTH_PASSES if smooth_passes is None else smooth_passes),
           "limitPasses": _passes(LIMIT_PASSES if limit_passes is None else limit_passes, "limit passes")}
    for key, value, default, source in (("stretchLimit", stretch_limit, STRETCH_LIMIT, "stretch limit"),
                                        ("turnStart", turn_start, TURN_START, "turn start")):
        number = _stretch_value(default if value is None else value)
        if number is None:
            raise KisekaeError(f"must be a finite number >= 0, got {value!r}", source)
        out[key] = number
    out["liftPasses"] = _passes(LIFT_PASSES if lift_passes is None else lift_passes, "lift passes")
    out["unflipPasses"] = _passes(UNFLIP_PASSES if unflip_passes is None else unflip_passes, "unflip passes")
    out["liftLimitPasses"] = _passes(LIFT_LIMIT_PASSES if lift_limit_passes is None else lift_limit_passes,
                                     "lift limit passes")
    if follow_passes is None:
        from ..fit.runtime import FOLLOW_SMOOTH as follow_passes
    out["followPasses"] = _passes(follow_passes, "follow passes")
    return out


def _sample_arrays(lift, f, n: int, k: int, n_body_faces: int, garment_name: str) -> dict:
    """The edge samples' arrays of :func:`surface_bake` (empty when ``lift`` is None)."""
    if lift is None:
        empty = np.zeros(0, np.uint32)
        return {"sampleEnds": empty, "sampleWeights": np.zeros(0, np.float32), "sampleChord": np.zeros(0, np.float32),
                "sampleCorners": empty, "vertexSamplePtr": np.zeros(n + 1, np.uint32), "vertexSampleIdx": empty}
    samples, cand, (sptr, sidx) = lift
    source = f"edge samples of {garment_name}"
    if samples.n_vertices != n:
        raise KisekaeError(f"made for {samples.n_vertices} garment vertices, the candidates for {n}", source)
    tri = np.asarray(cand.triangles)
    if tri.shape != (len(samples), k) or cand.n_body_faces != n_body_faces:
        raise KisekaeError(f"sample candidates {tri.shape} on {cand.n_body_faces} body triangles; expected "
                           f"({len(samples)}, {k}) on {n_body_faces}", source)
    sptr, sidx = np.asarray(sptr, np.int64), np.asarray(sidx, np.int64)
    if len(sptr) != n + 1 or not _offsets(sptr, len(sidx)) or (
            sidx.size and (sidx.min() < 0 or sidx.max() >= 3 * len(samples))):
        raise KisekaeError("the vertex sample table is not CSR over the samples' corners", source)
    if not (_barycentric(samples.bary) and np.all(np.isfinite(samples.chord)) and np.all(samples.chord >= 0)):
        raise KisekaeError("sample weights must be barycentric and chords finite lengths >= 0", source)
    return {"sampleEnds": np.asarray(samples.ends).astype(np.uint32).ravel(),
            "sampleWeights": np.asarray(samples.bary).astype(np.float32).ravel(), "sampleChord": samples.chord.astype(np.float32),
            "sampleCorners": f[tri].astype(np.uint32).ravel(), "vertexSamplePtr": sptr.astype(np.uint32),
            "vertexSampleIdx": sidx.astype(np.uint32)}


def _offsets(ptr, entries: int) -> bool:
    """True when ``ptr`` are CSR offsets: from 0, never decreasing, ending at ``entries``."""
    return bool(ptr[0] == 0 and not np.any(np.diff(ptr) < 0) and ptr[-1] == entries)


def _check_ring(ptr, idx, weld, n: int, source: str) -> None:
    """Raise KisekaeError unless ``(ptr, idx)`` is a CSR one-ring of ``n`` vertices and ``weld`` a map into them."""
    if len(ptr) != n + 1 or not _offsets(ptr, len(idx)):
        raise KisekaeError(f"not a CSR ring of {n} vertices ({len(ptr)} offsets, {len(idx)} entries)", source)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise KisekaeError(f"neighbour ids outside 0..{n - 1}", source)
    if len(weld) != n or (weld.size and (weld.min() < 0 or weld.max() >= n)):
        raise KisekaeError(f"weld map of {len(weld)} entries for {n} vertices, or ids out of range", "weld")


def _passes(value, source) -> int:
    """A pass count given to :func:`surface_bake`: an integer >= 0 (not a bool), or a KisekaeError."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise KisekaeError(f"must be an integer >= 0, got {value!r}", source)
    return int(value)


def surface_bake_header(doc: dict, binary_name: str) -> dict:
    """The JSON header of ``doc`` whose arrays live in the binary file ``binary_name`` (a name next to the header)."""
    head = {k: v for k, v in doc.items() if k not in LAYOUT}
    lengths = _doc_lengths(doc)
    head["binary"] = binary_name
    head["layout"] = [{"name": name, "count": lengths[name]} for name in LAYOUT]
    head["bytes"] = 4 * sum(lengths.values())
    return head


def surface_bake_paths(folder, garment_name: str) -> tuple:
    """``(header, binary)`` paths ``kisekae fit`` writes for a garment in ``folder``."""
    safe = garment_name.replace(":", "_").replace("/", "_").replace("\\", "_")
    folder = Path(folder)
    return folder / f"{safe}.surface.json", folder / f"{safe}.surface.bytes"


def layer_bake_paths(folder, outer: str, inner: str) -> tuple:
    """``(header, binary)`` paths ``kisekae fit --layered`` writes for garment ``outer`` worn over ``inner``: a surface
    bake whose "body" is the inner garment (the layer push, :mod:`kisekae.fit.layer_push`)."""
    head, binary = surface_bake_paths(folder, f"{outer}.over.{inner}")
    return head, binary


def write_surface_bake(doc: dict, header_path, binary_path=None) -> tuple:
    """Write the bake as a JSON header and a binary file of little-endian uint32 (float32 for the chords) next to it
    (by default).

    Returns
    -------
    ``(header_path, binary_path)``
    """
    header_path = Path(header_path)
    binary_path = header_path.with_suffix(".bytes") if binary_path is None else Path(binary_path)
    if binary_path.parent.resolve() != header_path.parent.resolve():
        raise KisekaeError("the binary must lie next to its header (the header names it without a folder)",
                           binary_path)
    lengths = _doc_lengths(doc)
    arrays = []
    for name in LAYOUT:
        a = np.asarray(doc[name]).ravel()
        if len(a) != lengths[name]:
            raise KisekaeError(f"{name} has {len(a)} entries, the header says {lengths[name]}", "surface bake")
        arrays.append(a.astype("<f4" if name in FLOAT_ARRAYS else "<u4"))
    binary_path.write_bytes(b"".join(a.tobytes() for a in arrays))
    header_path.write_text(json.dumps(surface_bake_header(doc, binary_path.name), indent=1))
    return header_path, binary_path


def _shown(value) -> str:
    """A value read from a file, for a message: a number as it is, anything else by :func:`quote_name`."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return repr(value)
    return quote_name(value)


def _count(head: dict, key: str, source) -> int:
    value = head.get(key)
    if value is None:
        raise KisekaeError(f"missing entry {key!r}", source)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise KisekaeError(f"{key!r} must be a non-negative integer, got {_shown(value)}", source)
    return int(value)


def _stretch_value(value) -> float | None:
    """``value`` as a float if it is a finite number >= 0 (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        return None
    try:
        f = float(value)
    except OverflowError:  # an integer too large for a float
        return None
    return f if np.isfinite(f) and f >= 0 else None


def _stretch(head: dict, source, key: str = "stretchLimit") -> float:
    """The header's ``key`` (``stretchLimit``, ``turnStart``): a finite number >= 0 (JSON has no inf or nan, but
    Python's json reads them)."""
    value = head.get(key)
    if value is None:
        raise KisekaeError(f"missing entry {key!r}", source)
    stretch = _stretch_value(value)
    if stretch is None:
        raise KisekaeError(f"{key!r} must be a finite number >= 0, got {_shown(value)}", source)
    return stretch


def _ids(values, name: str, source) -> np.ndarray:
    """An inline array of non-negative integer ids (list or array) as int64, or a KisekaeError."""
    try:
        a = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise KisekaeError(f"{name!r} is not an array of integers ({exc})", source) from None
    a = a.ravel()
    if a.dtype.kind in "ui":
        out = a.astype(np.int64)
    elif a.dtype.kind == "f" or a.dtype == object:
        try:
            fl = a.astype(np.float64)
        except (TypeError, ValueError):
            raise KisekaeError(f"non-integer data in {name!r}", source) from None
        if not np.all(np.isfinite(fl)) or np.any(fl != np.round(fl)) or any(isinstance(v, bool) for v in a.tolist()):
            raise KisekaeError(f"non-integer data in {name!r}", source)
        out = fl.astype(np.int64)
    elif a.size == 0:
        out = np.zeros(0, np.int64)
    else:
        raise KisekaeError(f"non-integer data in {name!r} ({a.dtype})", source)
    if out.size and out.min() < 0:
        raise KisekaeError(f"negative values in {name!r} (ids are unsigned)", source)
    return out


def _floats(values, name: str, source) -> np.ndarray:
    """An inline array of numbers (list or array) as float64, or a KisekaeError."""
    try:
        a = np.asarray(values)
        if isinstance(values, (list, tuple)) and any(isinstance(v, bool) for v in values):
            raise TypeError("booleans")
        if a.dtype.kind not in "uif":
            raise TypeError(f"{a.dtype} data")
        return a.astype(np.float64).ravel()
    except (TypeError, ValueError) as exc:
        raise KisekaeError(f"{name!r} is not an array of numbers ({exc})", source) from None


def load_surface_bake(path_or_doc, n_garment_vertices: int, n_body_vertices: int) -> dict:
    """Read and check a surface bake: a header path (with its binary next to it) or a document.

    Parameters
    ----------
    path_or_doc : str, os.PathLike or dict
        The ``.surface.json`` header :func:`write_surface_bake` wrote, or a document with its arrays inline
        (as :func:`surface_bake` returns it, or with the arrays as JSON lists).
    n_garment_vertices, n_body_vertices : int, the meshes it must fit

    Returns
    -------
    dict with ``version``, ``garment``, ``k``, ``smooth_passes``, ``limit_passes`` (int),
    ``stretch_limit`` (float), ``n_body_triangles``, ``corners`` (N, K, 3)
    int64 body vertex ids, ``ring`` ``(ptr (N+1,), idx (E,))`` int64 (as :func:`kisekae.fit.surface.one_ring`),
    ``weld`` (N,) int64 and ``chord`` (N,) float64 metres (float32 values); ``lift_passes``, ``unflip_passes``,
    ``lift_limit_passes`` (int), ``turn_start`` (float), ``sample_ends`` (S, 3), ``sample_weights`` (S, 3), ``sample_chord`` (S,)
    float64, ``sample_corners`` (S, K, 3), ``vertex_samples`` ``(ptr (N+1,), idx (M,))`` and ``shortest`` (N,) float64
    (float32 values); ``follow_passes`` (int), ``follow_corners`` (N, 3) int64, ``follow_bary`` (N, 3) and
    ``follow_share`` (N,) float64 (float32 values); ``depth_bound`` (Nb,) float64 metres (``inf`` where the bake
    stores 1e30: no bound); ``self_corners`` (N, 4, 3) int64 garment vertex ids, ``self_side`` (N, 4) and ``self_gap``
    (N,) float64 (the self layers; a side 0 ends a vertex's list).

    Raises
    ------
    KisekaeError
        Naming the file (or ``surface bake`` for a document): a missing or unreadable file, another format or
        version, missing, non-integer or negative counts or data (``limitPasses`` included), a ``stretchLimit``
        that is missing, not a number or not finite and >= 0, counts other than the meshes', a binary
        shorter (truncated) or longer than its header says, ids out of range, a ring that is not CSR, chords that
        are not finite and >= 0.
    """
    head, source, binary = _read_header(path_or_doc)
    counts = _check_counts(head, source, n_garment_vertices, n_body_vertices)
    n, k, e = counts["vertices"], counts["candidates"], counts["ringEntries"]
    ns, ms = counts["samples"], counts["vertexSampleEntries"]
    lengths = _lengths(n, k, e, ns, ms, n_body_vertices)
    if binary is None:
        arrays = _inline_arrays(head, source, lengths)
    else:
        arrays = _binary_arrays(head, source, binary, lengths)
        source = binary
    corners, ptr, idx, weld, chord = (arrays[name] for name in LAYOUT[:5])
    _check_ids(corners, ptr, idx, weld, n, e, n_body_vertices, source)
    if not np.all(np.isfinite(chord)) or (chord.size and chord.min() < 0):
        raise KisekaeError("'chord' must be finite lengths >= 0 (m)", source)
    ends, w, schord, scorners, sptr, sidx, floor = (arrays[name] for name in LAYOUT[5:12])
    _check_samples(ends, w, schord, scorners, sptr, sidx, n, ns, ms, n_body_vertices, source)
    if not np.all(np.isfinite(floor)) or (floor.size and (floor.min() < 0 or floor.max() >= 1)):
        raise KisekaeError("'shortest' must be fractions in [0, 1) of the skinned edge lengths", source)
    fcorners, fbary, fshare, depth = (arrays[name] for name in LAYOUT[12:16])
    _check_follow(fcorners, fbary, fshare, depth, n_body_vertices, source)
    scorners_, sside, sgap = (arrays[name] for name in LAYOUT[16:])
    _check_self(scorners_, sside, sgap, n, source)
    return {"version": SURFACE_BAKE_VERSION, "garment": str(head.get("garment", "")), "k": k,
            "smooth_passes": counts["smoothPasses"], "limit_passes": counts["limitPasses"],
            "stretch_limit": counts["stretchLimit"], "n_body_triangles": counts["bodyTriangles"],
            "corners": corners.reshape(n, k, 3), "ring": (ptr, idx), "weld": weld, "chord": chord,
            "lift_passes": counts["liftPasses"], "unflip_passes": counts["unflipPasses"],
            "lift_limit_passes": counts["liftLimitPasses"],
            "turn_start": counts["turnStart"], "sample_ends": ends.reshape(ns, 3),
            "sample_weights": w.reshape(ns, 3),
            "sample_chord": schord, "sample_corners": scorners.reshape(ns, k, 3), "vertex_samples": (sptr, sidx),
            "shortest": floor, "follow_passes": counts["followPasses"], "follow_corners": fcorners.reshape(n, 3),
            "follow_bary": fbary.reshape(n, 3), "follow_share": fshare,
            "depth_bound": np.where(depth >= np.float32(NO_DEPTH_BOUND), np.inf, depth),
            "self_corners": scorners_.reshape(n, SELF_CANDIDATES, 3), "self_side": sside.reshape(n, SELF_CANDIDATES),
            "self_gap": sgap}


def _check_follow(corners, bary, share, depth, n_body_vertices: int, source) -> None:
    """The body follow's binding and the depth bound of a bake."""
    if corners.size and corners.max() >= n_body_vertices:
        raise KisekaeError(f"followCorners outside 0..{n_body_vertices - 1}", source)
    if not _barycentric(bary.reshape(-1, 3)) or not _shares(share):
        raise KisekaeError("'followBary' must be three weights >= 0 per vertex, summing to 1, and 'followShare' "
                           "shares in [0, 1]", source)
    if np.isnan(depth).any() or (depth.size and depth.min() < 0):
        raise KisekaeError("'depthBound' must be lengths >= 0 (m; 1e30 for none)", source)


def _check_self(corners, side, gap, n: int, source) -> None:
    """The self layers of a bake: sides -1, 0 or +1 with every 0 after a vertex's last candidate, corner ids within
    the garment, gaps finite lengths >= 0."""
    side = side.reshape(n, SELF_CANDIDATES)
    if not np.isin(side, (-1.0, 0.0, 1.0)).all() or (np.diff((side != 0).astype(np.int8), axis=1) > 0).any():
        raise KisekaeError("'selfSide' must be +1 or -1 per candidate, then 0 after a vertex's last one", source)
    if corners.size and corners.max() >= n:
        raise KisekaeError(f"selfCorners outside 0..{n - 1}", source)
    if not np.all(np.isfinite(gap)) or (gap.size and gap.min() < 0):
        raise KisekaeError("'selfGap' must be finite lengths >= 0 (m)", source)


def _check_samples(ends, w, chord, corners, ptr, idx, n: int, ns: int, ms: int, n_body_vertices: int, source) -> None:
    """The samples' arrays: corners within the garment, barycentric weights, chords finite >= 0, candidate corners
    within the body, the vertex table CSR over the samples' corners."""
    if ends.size and ends.max() >= n:
        raise KisekaeError(f"sample end ids outside 0..{n - 1}", source)
    if not _barycentric(w.reshape(-1, 3)):
        raise KisekaeError("'sampleWeights' must be three weights >= 0 per sample, summing to 1", source)
    if not np.all(np.isfinite(chord)) or (chord.size and chord.min() < 0):
        raise KisekaeError("'sampleChord' must be finite lengths >= 0 (m)", source)
    if corners.size and corners.max() >= n_body_vertices:
        raise KisekaeError(f"sample candidate corner ids outside 0..{n_body_vertices - 1}", source)
    if not _offsets(ptr, ms):
        raise KisekaeError(f"vertexSamplePtr is not CSR offsets from 0 to {ms} vertexSampleEntries", source)
    if idx.size and idx.max() >= 3 * ns:
        raise KisekaeError(f"vertexSampleIdx entries outside 0..{3 * ns - 1} (3 sample + corner)", source)


def _barycentric(w) -> bool:
    """True when every row of ``w`` (S, 3) is finite, >= 0 and sums to 1 (within float32 rounding)."""
    w = np.asarray(w, dtype=np.float64)
    return bool(np.all(np.isfinite(w)) and np.all(w >= 0) and np.all(np.abs(w.sum(axis=1) - 1.0) < 1e-5))


def _read_header(path_or_doc):
    """``(header dict, source for errors, binary path or None)`` of a bake given as a path or a document."""
    if isinstance(path_or_doc, dict):
        return path_or_doc, "surface bake", None
    source = Path(path_or_doc)
    if not source.is_file():
        raise KisekaeError("surface bake header not found", source)
    try:
        head = json.loads(source.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise KisekaeError(f"not a JSON surface bake header ({exc})", source) from None
    if not isinstance(head, dict):
        raise KisekaeError("not a JSON surface bake header (not an object)", source)
    binary = head.get("binary")
    if not isinstance(binary, str) or not binary or os.path.basename(binary) != binary:
        raise KisekaeError(f"'binary' must name a file next to the header, got {_shown(binary)}", source)
    return head, source, source.parent / binary


def _check_counts(head, source, n_garment_vertices: int, n_body_vertices: int) -> dict:
    """The header's format, version and counts, checked against the meshes."""
    if head.get("format", SURFACE_BAKE_FORMAT) != SURFACE_BAKE_FORMAT or head.get("version") != SURFACE_BAKE_VERSION:
        raise KisekaeError(f"not a version-{SURFACE_BAKE_VERSION} kisekae surface bake (format "
                           f"{_shown(head.get('format'))}, version {_shown(head.get('version'))}; write it again "
                           "with kisekae fit)", source)
    counts = {key: _count(head, key, source) for key in _HEADER_COUNTS}
    counts["stretchLimit"] = _stretch(head, source)
    counts["turnStart"] = _stretch(head, source, "turnStart")
    if counts["vertices"] != n_garment_vertices:
        raise KisekaeError(f"baked for {counts['vertices']} garment vertices, the garment has {n_garment_vertices}",
                           source)
    if counts["bodyVertices"] != n_body_vertices:
        raise KisekaeError(f"baked for a body of {counts['bodyVertices']} vertices, the body has {n_body_vertices}",
                           source)
    if not 1 <= counts["candidates"] <= 64:
        raise KisekaeError(f"'candidates' must be 1 to 64, got {counts['candidates']}", source)
    return counts


def _inline_arrays(head, source, lengths: dict) -> dict:
    """The arrays of a document that carries them inline, checked against the counts."""
    missing = [name for name in LAYOUT if name not in head]
    if missing:
        raise KisekaeError(f"missing arrays {', '.join(missing)}", source)
    arrays = {name: _floats(head[name], name, source) if name in FLOAT_ARRAYS else _ids(head[name], name, source)
              for name in LAYOUT}
    for name in LAYOUT:
        if len(arrays[name]) != lengths[name]:
            raise KisekaeError(f"{name!r} has {len(arrays[name])} entries, the counts say {lengths[name]}", source)
    return arrays


def _binary_arrays(head, source, binary: Path, lengths: dict) -> dict:
    """The arrays of the little-endian uint32 binary next to a header, checked against its layout and size."""
    layout = head.get("layout")
    if layout != [{"name": name, "count": lengths[name]} for name in LAYOUT]:
        raise KisekaeError("'layout' disagrees with the counts (or is missing)", source)
    if not binary.is_file():
        raise KisekaeError(f"the binary {binary.name} named by the header is missing", binary)
    data = binary.read_bytes()
    size = 4 * sum(lengths.values())
    if len(data) < size:
        raise KisekaeError(f"truncated: {len(data)} bytes, the header {source.name} says {size}", binary)
    if len(data) > size:
        raise KisekaeError(f"{len(data)} bytes, longer than the {size} its header {source.name} says", binary)
    arrays, at = {}, 0
    for name in LAYOUT:
        dtype = "<f4" if name in FLOAT_ARRAYS else "<u4"
        arrays[name] = np.frombuffer(data, dtype=dtype, count=lengths[name], offset=4 * at).astype(
            np.float64 if name in FLOAT_ARRAYS else np.int64)
        at += lengths[name]
    return arrays


def _check_ids(corners, ptr, idx, weld, n: int, e: int, n_body_vertices: int, source) -> None:
    """Candidate corners within the body, the ring as CSR over the garment, the weld within the garment."""
    if corners.size and corners.max() >= n_body_vertices:
        raise KisekaeError(f"candidate corner ids outside 0..{n_body_vertices - 1} (body vertex {int(corners.max())})",
                           source)
    if not _offsets(ptr, e):
        raise KisekaeError(f"ringPtr is not CSR offsets from 0 to {e} ringEntries", source)
    if idx.size and idx.max() >= n:
        raise KisekaeError(f"ring neighbour ids outside 0..{n - 1}", source)
    if weld.size and weld.max() >= n:
        raise KisekaeError(f"weld ids outside 0..{n - 1}", source)

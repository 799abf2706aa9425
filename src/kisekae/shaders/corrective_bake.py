"""The body's pose-space correctives for an engine: a JSON document and a little-endian byte blob.

:mod:`kisekae.avatar.correctives` learns corrective shapes that follow the joint rotations. An engine needs:

- **per joint** (``joints`` in the document): its bone and parent bone by name, both bones' rest matrices
  (mesh space, 4 × 4 row-major, metres), the basis width ``sigma`` (radians) and the ``K`` centres (unit
  quaternions, one flat list of x, y, z, w per centre). Each frame the engine reads the joint's local rotation from its skinning matrices
  ``S = boneToWorld · bindpose`` exactly as :func:`kisekae.avatar.contact_solve.local_motion` does
  (``W = S · rest``, ``L = W_parent⁻¹ W``, ``R = rest_localᵀ L``; :func:`engine_features` is the reference) and
  evaluates ``KisekaeCorrectiveFeature`` for each centre. Only the skinning matrices are used, so the bones'
  own axes in the engine do not matter;
- **per vertex**: the entries of :class:`~kisekae.avatar.correctives.PoseCorrectives` (``vertexPtr``,
  ``entryJoint``, ``coefficients``) for ``KisekaeCorrectiveOffset``, or the same data as one blend shape per
  (joint, centre) whose weight is the feature (:func:`blend_shapes`; Unity's ``KisekaeBodyCorrectives.cs``
  builds them, since Unity applies blend shapes before skinning as the correctives need).

:func:`corrective_bake` writes both (``kisekae fit`` saves them as ``body_correctives.json`` +
``body_correctives.bytes``, and a garment's pose-space correctives, where it has them, as ``GARMENT.correctives.json`` +
``.bytes``: the same format, its ``settings`` naming the garment); :func:`correctives_from_bake` reads them back,
checked.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..avatar.correctives import PoseCorrectives, joint_features
from ..errors import KisekaeError

#: Version of the bake document.
BAKE_VERSION = 1
#: Largest blob read, bytes.
MAX_BYTES = 256 * 2 ** 20


def corrective_bake_paths(out, garment: str | None = None) -> tuple:
    """``(out/body_correctives.json, out/body_correctives.bytes)``, or for ``garment`` its pose-space correctives
    (:mod:`kisekae.fit.garment_correctives`, the same format over the garment's vertices):
    ``(out/GARMENT.correctives.json, out/GARMENT.correctives.bytes)``."""
    out = Path(out)
    stem = "body_correctives" if garment is None else f"{garment}.correctives"
    return out / f"{stem}.json", out / f"{stem}.bytes"


def corrective_bake(correctives: PoseCorrectives, skeleton) -> tuple:
    """The document and blob of ``correctives`` for ``skeleton`` (its rest matrices and bone names).

    Returns
    -------
    (dict, bytes): JSON-ready document with ``version``, ``centres`` (K), ``vertexCount``, ``entryCount``,
    ``joints`` and ``layout`` (byte offset and count of ``vertexPtr`` uint32, ``entryJoint`` uint32 and
    ``coefficients`` float32 (entry, centre, xyz)), and the blob.
    """
    c = correctives
    c.check()
    names = list(skeleton.names)
    if list(c.bone_names) != names:
        raise KisekaeError("made for another skeleton (bone names differ)", "correctives")
    rest = np.asarray(skeleton.rest, dtype=np.float64)
    joints = []
    for s, b in enumerate(c.joints):
        p = int(skeleton.parents[int(b)])
        if p < 0:
            raise KisekaeError(f"joint {names[int(b)]!r} has no parent bone", "correctives")
        joints.append({"bone": names[int(b)], "parent": names[p], "rest": rest[int(b)].ravel().tolist(),
                       "parentRest": rest[p].ravel().tolist(), "sigma": float(c.sigma[s]),
                       "centres": c.centres[s].ravel().tolist()})
    layout, blob = pack_blob(zip(("vertexPtr", "entryJoint", "coefficients"),
                                 (np.ascontiguousarray(c.vertex_ptr, "<u4"), np.ascontiguousarray(c.entry_joint, "<u4"),
                                  np.ascontiguousarray(c.coefficients, "<f4"))))
    doc = {"version": BAKE_VERSION, "centres": int(c.centres.shape[1]), "vertexCount": c.n_vertices,
           "entryCount": int(len(c.entry_joint)), "joints": joints, "layout": layout,
           "settings": dict(c.settings), "meshHash": c.mesh_hash}
    return doc, blob


def pack_blob(named) -> tuple:
    """``(layout, blob)`` of ``named`` ``(key, little-endian array)`` pairs laid end to end: ``layout[key]`` is
    ``{"offset": bytes, "count": values}``, as the bakes' JSON headers store it (:func:`unpack_blob` reads it)."""
    layout, chunks, at = {}, [], 0
    for key, a in named:
        layout[key] = {"offset": at, "count": int(a.size)}
        chunks.append(a.tobytes())
        at += a.nbytes
    return layout, b"".join(chunks)


def unpack_blob(layout, blob: bytes, spec, want: dict, source: str) -> dict:
    """The arrays of ``spec`` (``(key, little-endian 4-byte dtype)`` pairs) read from ``blob`` at ``layout``'s
    offsets (:func:`pack_blob`), each checked: its count equals ``want[key]`` where given, and it lies inside the blob.

    Raises
    ------
    KisekaeError
        Naming ``source`` for a missing or malformed layout entry or an array that does not fit.
    """
    out = {}
    for key, dt in spec:
        try:
            off, count = int(layout[key]["offset"]), int(layout[key]["count"])
        except KeyError as exc:
            raise KisekaeError(f"missing or unknown entry {exc}", source) from None
        except (TypeError, ValueError) as exc:
            raise KisekaeError(f"malformed entries ({exc})", source) from None
        if (key in want and count != want[key]) or off < 0 or count < 0 or off + 4 * count > len(blob):
            raise KisekaeError(f"{key}: {count} values at byte {off} do not fit the blob of {len(blob)} bytes"
                               + (f" (expected {want[key]})" if key in want else ""), source)
        out[key] = np.frombuffer(blob, dtype=dt, count=count, offset=off)
    return out


def correctives_from_bake(doc: dict, blob: bytes, bone_names, source: str = "body correctives bake") -> tuple:
    """Read a bake back: ``(PoseCorrectives, rest (J, 4, 4), parent_rest (J, 4, 4), parents (J,) bone ids)``.

    Raises
    ------
    KisekaeError
        For another version, missing entries, unknown bones, a blob of the wrong size or arrays that
        :meth:`PoseCorrectives.check` refuses.
    """
    if not isinstance(doc, dict) or doc.get("version") != BAKE_VERSION:
        got = doc.get("version") if isinstance(doc, dict) else None
        raise KisekaeError(f"not a version-{BAKE_VERSION} body correctives bake (version {got!r})", source)
    if len(blob) > MAX_BYTES:
        raise KisekaeError(f"blob larger than {MAX_BYTES} bytes", source)
    index = {n: i for i, n in enumerate(bone_names)}
    try:
        k, n, e = int(doc["centres"]), int(doc["vertexCount"]), int(doc["entryCount"])
        js = doc["joints"]
        joints = np.array([index[j["bone"]] for j in js], dtype=np.int64)
        parents = np.array([index[j["parent"]] for j in js], dtype=np.int64)
        rest = np.array([j["rest"] for j in js], dtype=np.float64).reshape(-1, 4, 4)
        parent_rest = np.array([j["parentRest"] for j in js], dtype=np.float64).reshape(-1, 4, 4)
        sigma = np.array([j["sigma"] for j in js], dtype=np.float64)
        centres = np.array([j["centres"] for j in js], dtype=np.float64).reshape(len(js), k, 4)
        layout = doc["layout"]
    except KeyError as exc:
        raise KisekaeError(f"missing or unknown entry {exc}", source) from None
    except (TypeError, ValueError) as exc:
        raise KisekaeError(f"malformed entries ({exc})", source) from None
    arrays = unpack_blob(layout, blob, (("vertexPtr", "<u4"), ("entryJoint", "<u4"), ("coefficients", "<f4")),
                         {"vertexPtr": n + 1, "entryJoint": e, "coefficients": 3 * k * e}, source)
    if not (np.all(np.isfinite(rest)) and np.all(np.isfinite(parent_rest))):
        raise KisekaeError("non-finite rest matrices", source)
    c = PoseCorrectives(joints, centres, sigma, arrays["vertexPtr"].astype(np.int64),
                        arrays["entryJoint"].astype(np.int32), arrays["coefficients"].reshape(e, k, 3).copy(),
                        list(bone_names), str(doc.get("meshHash", "")), dict(doc.get("settings") or {}))
    c.check(source)
    return c, rest, parent_rest, parents


def engine_features(correctives: PoseCorrectives, rest, parent_rest, parents, skin_matrices) -> np.ndarray:
    """(J, K) features as an engine computes them from the bake and the skinning matrices ``(B, 4, 4)``.

    Per joint: ``W = S_bone · rest``, ``W_p = S_parent · parentRest``, ``L = W_p⁻¹ W``, local rest
    ``L0 = parentRest⁻¹ rest``, rotation ``R = L0[:3, :3]ᵀ L[:3, :3]`` (orthonormalised), its quaternion, then the
    features. ``KisekaeBodyCorrectives.cs`` follows this.
    """
    from scipy.spatial.transform import Rotation

    m = np.asarray(skin_matrices, dtype=np.float64)
    c = correctives
    w = m[c.joints] @ rest
    wp = m[parents] @ parent_rest
    local = np.linalg.solve(wp, w)
    local0 = np.linalg.solve(parent_rest, rest)
    r = np.einsum("jki,jkl->jil", local0[:, :3, :3], local[:, :3, :3])
    u, _, vt = np.linalg.svd(r)
    q = Rotation.from_matrix(u @ vt).as_quat()
    return joint_features(q, c.centres, c.sigma)


def blend_shapes(correctives: PoseCorrectives) -> list:
    """The correctives as blend shapes: ``[(joint slot, centre, vertex ids (M,), deltas (M, 3) metres)]``, one per
    (joint, centre) that moves some vertex; a frame's rest-space offset is the sum of the shapes weighted by its
    features (a vertex has at most one entry per joint)."""
    c = correctives
    owner = np.repeat(np.arange(c.n_vertices), np.diff(c.vertex_ptr))
    out = []
    for j in range(len(c.joints)):
        rows = np.flatnonzero(c.entry_joint == j)
        for k in range(c.centres.shape[1]):
            d = c.coefficients[rows, k].astype(np.float64)
            out.append((j, k, owner[rows], d))
    return out


def mirrored_quaternions(q) -> np.ndarray:
    """Quaternions ``(..., 4)`` of rotations seen through the mirror x → −x (``(x, −y, −z, w)``): the frame of
    glTF importers that flip X. Angles between rotations, and so the features, are the same on both sides."""
    q = np.array(q, dtype=np.float64)
    q[..., 1:3] *= -1.0
    return q

"""The body contact's data for an engine: what ``KisekaeContactPlanes`` needs in a body vertex stage.

The joint-plane contact (:mod:`kisekae.avatar.contact`) has two kinds of data:

- **per joint** (at most ``KISEKAE_MAX_JOINTS``): the child and parent bone, the rest joint centre and
  the joint's rest normal (mesh space: the child's rest direction, or the rest bisector of a joint bent at rest,
  :func:`kisekae.avatar.contact.rest_normal`; metres), the ring radius and the radial reach ``flesh`` (metres).
  Each frame the engine poses them with the bones' skinning matrices ``M = boneToWorld · bindpose`` exactly
  as :meth:`~kisekae.avatar.contact.JointPlanes.posed` does, which also gives each joint its reach in ring
  radii for this frame's bend (between ``ringFactor`` and ``maxReach``, 0 when folded flat)
  (:func:`posed_tables` poses these arrays with the same function, the reference for ``KisekaeBodyContact.cs``);
- **per vertex**: four joint ids (ascending; an unused slot has id 0 and side 0), four sides (+1 child,
  -1 parent, 0 unused) and the rest position: three vertex attributes (Unity: UV channels 4, 5, 6).

:func:`contact_bake` writes both as one JSON document (``kisekae fit`` saves it as
``body_contact.json``); :func:`contact_from_bake` reads it back into the arrays the HLSL core takes.
"""

from __future__ import annotations

import numpy as np

from ..avatar.contact import REST_SLACK, BodyContact, JointPlanes, posed_joint_planes
from ..errors import KisekaeError
from .limits import hlsl_default

#: Version of the bake document.
BAKE_VERSION = 2


def max_joints() -> int:
    """``KISEKAE_MAX_JOINTS`` of the constant-array data source (the engine glue holds as many)."""
    return hlsl_default("KISEKAE_MAX_JOINTS")


def contact_bake(contact: BodyContact, bone_names) -> dict:
    """The body contact as a JSON-ready dict for the engine glue.

    Parameters
    ----------
    contact : BodyContact
        The avatar's contact step (``avatar.body.deform`` after ``with_body_contact()``).
    bone_names : sequence of str
        Bone names in skeleton order; the glue finds the bones by name.

    Returns
    -------
    dict with ``version``, ``gap``, ``band``, ``ringFactor``, ``maxReach``, ``restSlack`` (metres),
    ``joints`` (list of ``{child, parent, restCentre, restDir, radius, flesh}``) and flat per-vertex lists
    ``vertexJoints`` (4 ints per vertex), ``vertexSides`` (4 floats) and ``vertexRest`` (3 floats, metres).

    Raises
    ------
    KisekaeError
        If the body has more joints than the shader's table holds (the glue would drop them), or its planes
        have no radial reach (``flesh`` None: build them with :meth:`JointPlanes.from_skin`).
    """
    planes: JointPlanes = contact.planes
    names = list(bone_names)
    n_joints = len(planes.child)
    limit = max_joints()
    if n_joints > limit:
        raise KisekaeError(f"the body has {n_joints} contact joints but the shader's table holds {limit} "
                           "(KISEKAE_MAX_JOINTS); raise it and MaxJoints of KisekaeBodyContact.cs together",
                           "body contact")
    if max(int(planes.child.max(initial=-1)), int(planes.parent.max(initial=-1))) >= len(names):
        raise KisekaeError(f"joint bones out of range for {len(names)} bone names", "bone_names")
    if planes.flesh is None:
        raise KisekaeError("the joint planes have no radial reach (flesh); build them with JointPlanes.from_skin",
                           "body contact")
    flesh = np.asarray(planes.flesh, dtype=np.float64)
    slots = np.where(planes.slots >= 0, planes.slots, 0).astype(np.int64)
    joints = [{"child": names[int(c)], "parent": names[int(p)], "restCentre": [float(v) for v in planes.centre[j]],
               "restDir": [float(v) for v in planes.direction[j]], "radius": float(planes.radius[j]),
               "flesh": float(flesh[j])}
              for j, (c, p) in enumerate(zip(planes.child, planes.parent))]
    return {
        "version": BAKE_VERSION,
        "gap": float(contact.gap),
        "band": float(contact.band),
        "ringFactor": float(planes.ring_factor),
        "maxReach": float(planes.max_reach),
        "restSlack": float(REST_SLACK),
        "joints": joints,
        "vertexJoints": slots.ravel().tolist(),
        "vertexSides": planes.side.astype(np.float64).ravel().tolist(),
        "vertexRest": planes.rest.astype(np.float64).ravel().tolist(),
    }


def contact_from_bake(doc: dict, bone_names, source: str = "body contact bake") -> dict:
    """Arrays of a bake document (as :func:`contact_bake` writes it), checked.

    Returns
    -------
    dict with ``child``, ``parent`` (J,) int bone ids, ``rest_centre``, ``rest_dir`` (J, 3), ``radius``,
    ``flesh`` (J,) (metres), ``joints`` (N, 4) int, ``sides`` (N, 4), ``rest`` (N, 3) and the float parameters
    ``gap``, ``band``, ``ring_factor``, ``max_reach``, ``rest_slack``.

    Raises
    ------
    KisekaeError
        For another version (a version-1 bake has no ``flesh`` and ``maxReach``: bake it again), missing
        entries, unknown bones, arrays that disagree, non-finite numbers or a ``flesh`` that is not positive.
    """
    if not isinstance(doc, dict) or doc.get("version") != BAKE_VERSION:
        got = doc.get("version") if isinstance(doc, dict) else None
        raise KisekaeError(f"not a version-{BAKE_VERSION} body contact bake (version {got!r}; write it again with "
                           "kisekae fit)", source)
    index = {n: i for i, n in enumerate(bone_names)}
    try:
        child = np.array([index[j["child"]] for j in doc["joints"]], dtype=np.int64)
        parent = np.array([index[j["parent"]] for j in doc["joints"]], dtype=np.int64)
        rest_centre = np.array([j["restCentre"] for j in doc["joints"]], dtype=np.float64).reshape(-1, 3)
        rest_dir = np.array([j["restDir"] for j in doc["joints"]], dtype=np.float64).reshape(-1, 3)
        radius = np.array([j["radius"] for j in doc["joints"]], dtype=np.float64)
        flesh = np.array([j["flesh"] for j in doc["joints"]], dtype=np.float64)
        joints = np.asarray(doc["vertexJoints"], dtype=np.int64).reshape(-1, 4)
        sides = np.asarray(doc["vertexSides"], dtype=np.float64).reshape(-1, 4)
        rest = np.asarray(doc["vertexRest"], dtype=np.float64).reshape(-1, 3)
        params = {k: float(doc[key]) for k, key in (("gap", "gap"), ("band", "band"), ("ring_factor", "ringFactor"),
                                                     ("max_reach", "maxReach"), ("rest_slack", "restSlack"))}
    except KeyError as exc:
        raise KisekaeError(f"missing or unknown entry {exc}", source) from None
    except (TypeError, ValueError) as exc:
        raise KisekaeError(f"malformed arrays ({exc})", source) from None
    if not (len(joints) == len(sides) == len(rest)):
        raise KisekaeError(f"per-vertex arrays disagree: {len(joints)}, {len(sides)}, {len(rest)} vertices", source)
    if joints.size and (joints.min() < 0 or joints.max() >= max(len(child), 1)):
        raise KisekaeError(f"vertex joint ids outside 0..{len(child) - 1}", source)
    finite = [rest_centre, rest_dir, radius, flesh, sides, rest, np.array(list(params.values()))]
    if not all(np.all(np.isfinite(a)) for a in finite):
        raise KisekaeError("non-finite numbers", source)
    if np.any(flesh <= 0):
        raise KisekaeError(f"joint flesh must be positive (metres), got {float(flesh.min())!r}", source)
    return {"child": child, "parent": parent, "rest_centre": rest_centre, "rest_dir": rest_dir, "radius": radius,
            "flesh": flesh, "joints": joints, "sides": sides, "rest": rest, **params}


def posed_tables(tables: dict, skin_matrices) -> tuple:
    """The per-frame joint table an engine uploads: ``(centre (J, 3), normal (J, 3), reach (J,))``.

    ``skin_matrices`` (B, 4, 4) are bone-to-world times bindpose (Unity: ``bone.localToWorldMatrix *
    bindposes[i]``); the planes are posed by :func:`kisekae.avatar.contact.posed_joint_planes`, which
    ``KisekaeBodyContact.cs`` follows: ``reach`` is this frame's reach in ring radii
    (``clip(2 / |R_child d + R_parent d|, ringFactor, maxReach)``), 0 for a joint folded flat (inactive).
    """
    return posed_joint_planes(tables["child"], tables["parent"], tables["rest_centre"], tables["rest_dir"],
                              skin_matrices, tables["ring_factor"], tables["max_reach"])

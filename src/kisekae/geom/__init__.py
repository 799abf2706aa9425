"""Geometry primitives over plain arrays, each written once.

One module per primitive; each has its NumPy reference beside its Numba kernel (the tests
compare the two), and documents units, shapes and edge cases:

========== ==================================================================================
normals    face and area-weighted vertex normals (weld-aware)
edges      face edges, unique (welded) edges, vertex adjacency
weld       weld map: one representative vertex per position
closest    closest point on triangles; distance to a mesh through the BVH; candidate search
raytri     ray–triangle (Möller–Trumbore), first hit of a ray by brute force
bvh        median-split BVH over triangles, built once, refitted per pose
raycast    first hit and any hit of rays through the BVH
winding    generalized winding number (brute force and BVH with far-field approximation)
crossings  segments (garment edges) that cross triangles
========== ==================================================================================

This package imports nothing from the rest of kisekae except :mod:`kisekae.errors` and
:mod:`kisekae.validate`; every other package may import it.
"""

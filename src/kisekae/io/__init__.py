"""Readers and writers: Wavefront OBJ, MakeHuman (base mesh, rigs, weights, .mhclo), BVH motion."""

// Covered-skin culling: leaves the body triangles hidden under the worn garments out of the body's index buffer
// (kisekae.fit.runtime.covered_skin_triangles), so that skin which would poke through is not drawn at all.
// Input: per garment, its GameObject and NAME.covered.json from `kisekae fit -o DIR` (kisekae.shaders.covered_bake)
// as a TextAsset: format "kisekae-covered-skin", version 1, garment, bodyVertices, bodyTriangles, triangles (the
// culled triangle ids, ascending).
// Triangle ids. They index kisekae's triangle list of the body: the triangle primitives of the body's glTF mesh one
// after the other in primitive order, each in its index order (a body that kisekae exported is one primitive). The
// glTF importers for Unity make one submesh per primitive in the same order and keep each primitive's triangle
// order (they may flip the winding with the X axis, which leaves whole triangles in place), so id t is triangle
// t - offset(s) of submesh s, offset(s) being the triangle count of the submeshes before s. An importer or a
// tool that merges, splits, sorts or optimises the body's triangles breaks this (Unity's "Optimize Mesh"
// import option reorders vertices only); the counts below catch most such changes, not a reorder alone.
// On enable (after KisekaeBodyContact, which gives the body an instance of its mesh: DefaultExecutionOrder):
// checks every bake against the body's mesh (vertex count, total triangle count over the submeshes, triangle
// topology, version, ids in range and ascending) and refuses anything else with an error naming the object
// (the component then disables itself and the body is drawn whole). Then it draws an instance of the body's mesh
// whose index buffer it rewrites. Each LateUpdate it reads which garments are worn (the GameObject is active in
// the hierarchy and, where it has a Renderer, that renderer is enabled: one check per garment) and, when that
// changes, swaps in the index lists of that combination, built from the original mesh the first time the
// combination is worn and kept (per submesh, the original triangles that no worn garment covers). Nothing runs on
// the GPU; a swap re-uploads the body's index buffer once. On disable it puts the original mesh back.
// Other components that read the body's triangles (KisekaeSurfacePush: its body normals and triangle count) take
// them from FullTriangles(body), the uncut list. Not compiled or run in kisekae's CI (no Unity there).
using System;
using System.Collections.Generic;
using UnityEngine;

namespace Kisekae
{
    [Serializable]
    public class KisekaeCoveredBake
    {
        public string format;          // "kisekae-covered-skin"
        public int version;
        public string garment;
        public int bodyVertices;
        public int bodyTriangles;
        public int[] triangles;        // culled triangle ids, ascending
    }

    [Serializable]
    public class KisekaeCoveredGarment
    {
        [Tooltip("The garment's GameObject: worn while it is active (and its Renderer, if any, enabled)")]
        public GameObject garment;
        [Tooltip("NAME.covered.json from kisekae fit")]
        public TextAsset covered;
    }

    [DefaultExecutionOrder(100)]
    [DisallowMultipleComponent]
    [RequireComponent(typeof(SkinnedMeshRenderer))]
    public class KisekaeCoveredSkin : MonoBehaviour
    {
        public const int BakeVersion = 1;  // = kisekae.shaders.covered_bake.COVERED_BAKE_VERSION
        public const string BakeFormat = "kisekae-covered-skin";
        public const int MaxGarments = 64; // one bit each in the combination key

        public List<KisekaeCoveredGarment> garments = new List<KisekaeCoveredGarment>();

        SkinnedMeshRenderer _body;
        Mesh _original;                // the body's mesh as found on enable; never modified
        Mesh _working;                 // our instance of it, drawn instead
        Mesh _drawn;                   // the mesh whose index buffer we write (_working, or one that replaced it)
        int[][] _originalIndices;      // per submesh, without base vertex
        int[] _baseVertex;             // per submesh
        int[] _offset;                 // per submesh, first kisekae triangle id
        int _nTriangles;
        int[][] _covered;              // per garment, culled triangle ids
        GameObject[] _objects;         // per garment, as the list was on enable (edit the list while disabled)
        Renderer[] _renderers;         // per garment, its Renderer or null
        readonly Dictionary<ulong, int[][]> _combinations = new Dictionary<ulong, int[][]>();
        ulong _current;
        bool _applied;

        // Whether the body is drawn through this component now (its triangles may be culled).
        public bool Culling => isActiveAndEnabled && _drawn != null && _original != null;

        // The body's whole triangle list (kisekae's triangle order, base vertices applied), whatever is culled: for
        // components that need every body triangle (KisekaeSurfacePush's body normals).
        public static int[] FullTriangles(SkinnedMeshRenderer body)
        {
            var c = body.GetComponent<KisekaeCoveredSkin>();
            return c != null && c.Culling ? c._original.triangles : body.sharedMesh.triangles;
        }

        // Null when every bake fits the body, else the message that refuses them. Reads the bakes and the original
        // mesh's submeshes.
        public string BakeProblem()
        {
            string who = $"KisekaeCoveredSkin on '{name}'";
            _body = GetComponent<SkinnedMeshRenderer>();
            Mesh mesh = _body != null ? _body.sharedMesh : null;
            if (mesh == null)
                return $"{who}: the SkinnedMeshRenderer has no mesh";
            if (garments == null || garments.Count > MaxGarments)
                return $"{who}: {garments?.Count ?? 0} garments; at most {MaxGarments}";
            if (!mesh.isReadable)
                return $"{who}: turn on Read/Write in the import settings of '{mesh.name}' (its index lists are read)";
            string problem = ReadSubmeshes(mesh, who);
            if (problem != null) return problem;
            _covered = new int[garments.Count][];
            _objects = new GameObject[garments.Count];
            _renderers = new Renderer[garments.Count];
            for (int g = 0; g < garments.Count; g++)
            {
                problem = ReadBake(g, mesh, who);
                if (problem != null) return problem;
            }
            _original = mesh;
            return null;
        }

        string ReadSubmeshes(Mesh mesh, string who)
        {
            int n = mesh.subMeshCount;
            _originalIndices = new int[n][];
            _baseVertex = new int[n];
            _offset = new int[n];
            _nTriangles = 0;
            for (int s = 0; s < n; s++)
            {
                if (mesh.GetTopology(s) != MeshTopology.Triangles)
                    return $"{who}: submesh {s} of '{mesh.name}' is {mesh.GetTopology(s)}, not triangles";
                _originalIndices[s] = mesh.GetIndices(s, false);
                _baseVertex[s] = (int)mesh.GetBaseVertex(s);
                _offset[s] = _nTriangles;
                _nTriangles += _originalIndices[s].Length / 3;
            }
            return null;
        }

        string ReadBake(int g, Mesh mesh, string who)
        {
            KisekaeCoveredGarment entry = garments[g];
            if (entry == null || entry.garment == null || entry.covered == null)
                return $"{who}: garment {g} needs its GameObject and its NAME.covered.json";
            string what = $"{who}: '{entry.covered.name}' (garment '{entry.garment.name}')";
            KisekaeCoveredBake b;
            try
            {
                b = JsonUtility.FromJson<KisekaeCoveredBake>(entry.covered.text);
            }
            catch (ArgumentException e)
            {
                return $"{what} is not a JSON covered-skin bake ({e.Message})";
            }
            if (b == null || b.format != BakeFormat || b.version != BakeVersion || b.triangles == null)
                return $"{what} is not a version-{BakeVersion} kisekae covered-skin bake " +
                       "(write it again with kisekae fit)";
            if (b.bodyVertices != mesh.vertexCount)
                return $"{what} is for a body of {b.bodyVertices} vertices, '{mesh.name}' has {mesh.vertexCount}";
            if (b.bodyTriangles != _nTriangles)
                return $"{what} is for a body of {b.bodyTriangles} triangles, '{mesh.name}' has {_nTriangles} " +
                       $"over its {mesh.subMeshCount} submeshes (another mesh, or an importer that changed the " +
                       "triangle list)";
            for (int i = 0; i < b.triangles.Length; i++)
            {
                int t = b.triangles[i];
                if (t < 0 || t >= _nTriangles)
                    return $"{what}: triangle id {t} is outside 0..{_nTriangles - 1}";
                if (i > 0 && t <= b.triangles[i - 1])
                    return $"{what}: triangle ids are not ascending or repeat (entry {i})";
            }
            _covered[g] = b.triangles;
            _objects[g] = entry.garment;
            _renderers[g] = entry.garment.GetComponent<Renderer>();
            return null;
        }

        void OnEnable()
        {
            _combinations.Clear();
            _applied = false;
            string problem = BakeProblem();
            if (problem != null)
            {
                Debug.LogError(problem, this);
                _original = null;
                enabled = false;
                return;
            }
            _working = Instantiate(_original);
            _working.name = _original.name + " (kisekae covered skin)";
            _working.hideFlags = HideFlags.DontSave;
            _body.sharedMesh = _working;
            _drawn = _working;
            Apply(Worn());
        }

        ulong Worn()
        {
            ulong key = 0;
            for (int g = 0; g < _objects.Length; g++)
            {
                GameObject go = _objects[g];
                if (go == null || !go.activeInHierarchy) continue;  // destroyed or inactive: not worn
                Renderer r = _renderers[g];
                if (r != null && !r.enabled) continue;
                key |= 1UL << g;
            }
            return key;
        }

        // Per submesh, the original triangles that none of the garments in `key` covers.
        int[][] Build(ulong key)
        {
            var culled = new bool[_nTriangles];
            for (int g = 0; g < _covered.Length; g++)
                if ((key & (1UL << g)) != 0)
                    foreach (int t in _covered[g]) culled[t] = true;
            var lists = new int[_originalIndices.Length][];
            for (int s = 0; s < lists.Length; s++)
            {
                int[] src = _originalIndices[s];
                int kept = 0;
                for (int t = 0; t < src.Length / 3; t++)
                    if (!culled[_offset[s] + t]) kept++;
                var dst = new int[3 * kept];
                int at = 0;
                for (int t = 0; t < src.Length / 3; t++)
                {
                    if (culled[_offset[s] + t]) continue;
                    dst[at++] = src[3 * t];
                    dst[at++] = src[3 * t + 1];
                    dst[at++] = src[3 * t + 2];
                }
                lists[s] = dst;
            }
            return lists;
        }

        void Write(Mesh mesh, int[][] lists)
        {
            for (int s = 0; s < lists.Length; s++)
                mesh.SetIndices(lists[s], MeshTopology.Triangles, s, false, _baseVertex[s]);
        }

        void Apply(ulong key)
        {
            if (!_combinations.TryGetValue(key, out int[][] lists))
            {
                lists = key == 0 ? _originalIndices : Build(key);
                _combinations[key] = lists;
            }
            Write(_drawn, lists);
            _current = key;
            _applied = true;
        }

        void LateUpdate()
        {
            if (_drawn == null) return;
            Mesh now = _body.sharedMesh;
            if (now != _drawn)
            {
                // Another component gave the body a new mesh (KisekaeBodyContact enabled after us: an instance of
                // ours, with this frame's culled lists). Write whole lists into it from now on.
                if (now == null || now.vertexCount != _original.vertexCount ||
                    now.subMeshCount != _originalIndices.Length)
                {
                    string other = now != null ? now.name : "no mesh";
                    Debug.LogError($"KisekaeCoveredSkin on '{name}': the body's mesh was replaced by '{other}', " +
                                   "which is not the mesh the bakes are for; culling stops", this);
                    _drawn = null;
                    enabled = false;
                    return;
                }
                if (_drawn == _working)
                {
                    Destroy(_working);
                    _working = null;
                }
                _drawn = now;
                _applied = false;
            }
            ulong key = Worn();
            if (!_applied || key != _current) Apply(key);
        }

        void OnDisable()
        {
            if (_body != null && _drawn != null && _body.sharedMesh == _drawn)
            {
                if (_drawn == _working)
                    _body.sharedMesh = _original;
                else
                    Write(_drawn, _originalIndices);  // a mesh that replaced ours: put its whole lists back
            }
            if (_working != null) Destroy(_working);
            _working = null;
            _drawn = null;
            _original = null;
            _combinations.Clear();
        }
    }
}

"""Reads a USD stage with Pixar's own library (pxr, from the usd-core package) and prints what
tests/usd.rs checks, as JSON: the stage metadata, and per mesh prim its point count, time
samples, one sampled point, and the other attributes a renderer needs.

Usage: python3 check_stage.py STAGE.usda TIME VERTEX
"""
import json
import sys

from pxr import Usd, UsdGeom

path, time, vertex = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
stage = Usd.Stage.Open(path)
if stage is None:
    sys.exit(f"{path}: pxr could not open the stage")
out = {
    "up_axis": str(UsdGeom.GetStageUpAxis(stage)),
    "meters_per_unit": UsdGeom.GetStageMetersPerUnit(stage),
    "time_codes_per_second": stage.GetTimeCodesPerSecond(),
    "start": stage.GetStartTimeCode(),
    "end": stage.GetEndTimeCode(),
    "default_prim": str(stage.GetDefaultPrim().GetPath()),
    "meshes": {},
}
for prim in stage.Traverse():
    if not prim.IsA(UsdGeom.Mesh):
        continue
    mesh = UsdGeom.Mesh(prim)
    points = mesh.GetPointsAttr()
    at = points.Get(time)
    normals = mesh.GetNormalsAttr().Get(time)
    counts = mesh.GetFaceVertexCountsAttr().Get()
    extent = mesh.GetExtentAttr().Get(time)
    computed = UsdGeom.Boundable.ComputeExtentFromPlugins(mesh, time)
    out["meshes"][str(prim.GetPath())] = {
        "points": len(at),
        "samples": list(points.GetTimeSamples()),
        "point": list(at[vertex]),
        "first_point": list(points.Get(out["start"])[vertex]),
        "normals": len(normals),
        "normals_interpolation": str(mesh.GetNormalsInterpolation()),
        "faces": len(counts),
        "indices": len(mesh.GetFaceVertexIndicesAttr().Get()),
        "subdivision": str(mesh.GetSubdivisionSchemeAttr().Get()),
        "extent": [list(extent[0]), list(extent[1])],
        "computed_extent": [list(computed[0]), list(computed[1])],
        "st": len(prim.GetAttribute("primvars:st").Get() or []),
    }
print(json.dumps(out))

#!/usr/bin/env bash
# The hybrid solver's ablation (issue 34; docs/solver.md, "Ablation"): classical and hybrid
# bakes, side by side, on scenes no model was trained on (`drape train`'s default set is sphere
# drops of 12-20 vertices per side and skirts of at most 20 x 60 vertices). Not part of CI:
# it takes about 15 minutes on two cores. Needs python3 with numpy (benches/shapes/glb_shape.py).
#
#   benches/hybrid/ablation.sh DRAPE OUT_DIR MODEL [MODEL ...]
#
# DRAPE is the drape binary (a release build), MODEL a model name or .ron path for
# `drape bake --neural`. Each row: the solver's ms/frame and in brackets the network's share
# (stage_ms.neural over the simulated frames, pre-roll included), the largest edge stretch at
# the last frame, the 99th percentile of the edges' stretch at the last frame, the largest at
# any frame, the stats' penetrations, self-intersections, refused predictions / classical
# reruns, the most world edges in a substep, and the last frame's mean and lowest height.
# ITERATIONS (default "1 4 8") and SCENES (default "n64 r35 skirt n128")
# pick the rows. Prints one Markdown row per bake, and keeps each bake's stats in OUT_DIR.
set -euo pipefail
drape=$1
out=$2
shift 2
models=("$@")
iterations=${ITERATIONS:-1 4 8}
scenes=${SCENES:-n64 r35 skirt n128}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
for scene in $scenes; do
  dir=$out/$scene
  [ -f "$dir/scene.ron" ] && continue
  case $scene in
    n64) "$drape" demo "$dir" --scene sphere-drop --grid 64 ;;
    r35) "$drape" demo "$dir" --scene sphere-drop --grid 64 --sphere-radius 0.35 --drop-height 0.6 ;;
    n128) "$drape" demo "$dir" --scene sphere-drop --grid 128 ;;
    skirt) "$drape" demo "$dir" --scene walk --rings 64 --segments 160 ;;
    *) echo "unknown scene $scene" >&2; exit 2 ;;
  esac >/dev/null
done
row() { # scene label iterations stats glb
  python3 - "$@" <<'PY'
import json, re, subprocess, sys
scene, label, k, stats, glb = sys.argv[1:6]
d = json.load(open(stats))
frames = [f["max_stretch"] for f in d["per_frame"]]
s = d["summary"]
simulated = max(1, len(frames) - 1 + d.get("preroll_frames", 0))
neural = d["stage_ms"]["neural"] / simulated
shape = subprocess.run([sys.executable, sys.argv[6], glb], capture_output=True, text=True).stdout
mean = low = p99 = "?"
m = re.search(r"mean y (-?[0-9.]+) m, lowest y (-?[0-9.]+) m", shape)
if m:
    mean, low = m.group(1), m.group(2)
m = re.search(r"99th (-?[0-9.]+) %", shape)
if m:
    p99 = m.group(1)
net = f" ({neural:.1f})" if neural > 0 else ""
print(f"| {scene} | {label} | {k} | {d['sim_ms_per_frame']:.1f}{net} | {100*frames[-1]:.2f} % "
      f"| {p99} % | {100*s['max_stretch']:.2f} % | {s['body_penetrations']} "
      f"| {s['self_intersections']} | {s['neural_rejected']}/{s['neural_fallbacks']} "
      f"| {s.get('neural_world_edges', 0)} | {mean} / {low} |")
PY
}
shape_py="$here/../shapes/glb_shape.py"
echo "| scene | solver | iterations | ms/frame (network) | last frame | 99th pct. of edges, last frame | max, any frame | penetrations | self-intersections (most) | rejected / fallbacks | world edges (most) | mean / lowest height (m) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for scene in $scenes; do
  for k in $iterations; do
    for m in classical "${models[@]}"; do
      tag=$scene-$k-$(basename "$m" .ron)
      args=(--substeps 10 --iterations "$k")
      [ "$m" != classical ] && args+=(--neural "$m")
      "$drape" bake "$out/$scene/scene.ron" --out "$out/$tag.glb" --stats "$out/$tag.json" "${args[@]}" >/dev/null 2>"$out/$tag.err" \
        || { echo "| $scene | $m | $k | failed: $(tail -1 "$out/$tag.err") |"; continue; }
      row "$scene" "$(basename "$m" .ron)" "$k" "$out/$tag.json" "$out/$tag.glb" "$shape_py"
    done
  done
done

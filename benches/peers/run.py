#!/usr/bin/env python3
"""Side by side: Blender's cloth and Drape's bake on the standard scene (sphere-drop).

For every grid size N, Drape bakes `drape demo DIR --scene sphere-drop --grid N` with the
scene's substeps set to `--substeps` (10 by default), and Blender bakes the same scene
(benches/peers/blender_sphere_drop.py) at every `--qualities` value. Prints a Markdown table
with both times per frame, their ratio, both max-stretch and penetration figures, and writes
every raw result to OUT_DIR/results.json.

    nice python3 benches/peers/run.py                     # N = 32, 64; quality 5, 10
    nice python3 benches/peers/run.py --grids 32 --qualities 5 --repeat 3

Not part of CI. See benches/peers/README.md and docs/benchmarks.md.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


def run(cmd, log=None, **kw):
    """Runs a command; on failure prints its output tail and exits."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if log is not None:
        Path(log).write_text(p.stdout)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-4000:])
        sys.exit(f"error: command failed ({p.returncode}): {' '.join(map(str, cmd))}")
    return p.stdout


def set_solver_field(scene, text, name, value):
    """`text` with the scene's one `name: …,` field set to `value` (exits if not exactly one)."""
    text, count = re.subn(rf"\b{re.escape(name)}: [^,\n]+,", f"{name}: {value},", text)
    if count != 1:
        sys.exit(f"error: {scene}: expected one `{name}:` field, found {count}")
    return text


def drape_bake(drape, work, n, substeps, repeat, solver_fields=()):
    """Best of `repeat` bakes (by sim_ms_per_frame); returns the stats of that bake.
    `solver_fields` are (name, value) pairs set in the scene's `solver` besides `substeps`."""
    d = work / f"drape-{n}"
    run([drape, "demo", d, "--scene", "sphere-drop", "--grid", str(n)])
    scene = d / "scene.ron"
    text = set_solver_field(scene, scene.read_text(), "substeps", substeps)
    for name, value in solver_fields:
        text = set_solver_field(scene, text, name, value)
    scene.write_text(text)
    best = None
    for k in range(repeat):
        stats_path = d / f"stats-{k}.json"
        load = os.getloadavg()[0]
        run([drape, "bake", scene, "--out", d / "bake.glb", "--stats", stats_path])
        stats = json.loads(stats_path.read_text())
        stats["load_average_1min_before"] = load
        if stats["substeps"] != substeps:
            sys.exit(f"error: Drape baked {stats['substeps']} substeps, not {substeps}")
        if best is None or stats["sim_ms_per_frame"] < best["sim_ms_per_frame"]:
            best = stats
    return best


def blender_bake(blender, work, n, quality, frames, topology, repeat, extra, threads):
    best = None
    for k in range(repeat):
        out = work / f"blender-{n}-q{quality}-{topology}-{k}.json"
        load = os.getloadavg()[0]
        run([blender, "-b", "--factory-startup", "-t", str(threads),
             "--python", HERE / "blender_sphere_drop.py",
             "--", "--grid", str(n), "--quality", str(quality), "--frames", str(frames),
             "--topology", topology, "--out", out, *extra],
            log=out.with_suffix(".log"))
        res = json.loads(out.read_text())
        res["load_average_1min_before"] = load
        res["blender_threads_option"] = threads
        if best is None or res["s_per_frame"] < best["s_per_frame"]:
            best = res
    return best


def pct(x):
    return f"{x * 100:.1f} %"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--grids", type=int, nargs="+", default=[32, 64])
    p.add_argument("--qualities", type=int, nargs="+", default=[5, 10])
    p.add_argument("--substeps", type=int, default=10, help="Drape substeps per frame")
    p.add_argument("--frames", type=int, default=60)
    p.add_argument("--topology", choices=["quads", "tris"], default="quads",
                   help="Blender's cloth mesh: quad grid (default) or Drape's triangles")
    p.add_argument("--repeat", type=int, default=1, help="runs per configuration; the fastest is kept")
    p.add_argument("--drape", default=str(REPO / "target/release/drape"),
                   help="the drape binary (build it with `cargo build --release --bin drape`)")
    p.add_argument("--drape-label", default=None,
                   help="what the drape binary was built from, for the table "
                        "(default: `git describe --dirty` of this checkout)")
    p.add_argument("--blender", default=shutil.which("blender") or "blender")
    p.add_argument("--blender-threads", type=int, default=0,
                   help="Blender's thread count (its -t option); 0: all cores")
    p.add_argument("--blender-arg", action="append", default=[],
                   help="extra argument for blender_sphere_drop.py (repeatable), e.g. --blender-arg=--mass=0.0001")
    p.add_argument("--drape-solver", action="append", default=[], metavar="NAME=VALUE",
                   help="set a field of Drape's solver settings in the demo scene (repeatable), "
                        "e.g. --drape-solver span_limit_slack=0.0")
    p.add_argument("--out-dir", default=None, help="keep the scenes, bakes and JSON here")
    args = p.parse_args()
    solver_fields = []
    for item in args.drape_solver:
        name, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[a-z_0-9]+", name) or not value:
            sys.exit(f"error: --drape-solver {item!r}: expected NAME=VALUE, e.g. span_limit_slack=0.0")
        solver_fields.append((name, value))

    if not Path(args.drape).is_file():
        sys.exit(f"error: {args.drape} not found; run `cargo build --release --bin drape`")
    work = Path(args.out_dir or tempfile.mkdtemp(prefix="drape-peers-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    # A private copy: the shared target directory may be rebuilt during the run.
    drape = work / "drape"
    shutil.copy2(args.drape, drape)

    versions = {
        "drape": run([drape, "--version"]).strip(),
        "drape_git": args.drape_label or subprocess.run(
            ["git", "-C", REPO, "describe", "--always", "--dirty"],
            capture_output=True, text=True).stdout.strip(),
        "drape_sha256": hashlib.sha256(drape.read_bytes()).hexdigest(),
        "blender": run([args.blender, "--version"]).splitlines()[0].strip(),
        "cpus": os.cpu_count(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "nice": os.nice(0),
    }
    print(f"# {versions['drape']} ({versions['drape_git']}), {versions['blender']}, "
          f"{versions['cpus']} CPUs, nice {versions['nice']}, work dir {work}", file=sys.stderr)

    rows = []
    for n in args.grids:
        print(f"drape N={n} ...", file=sys.stderr, flush=True)
        d = drape_bake(drape, work, n, args.substeps, args.repeat, solver_fields)
        for q in args.qualities:
            print(f"blender N={n} quality {q} ...", file=sys.stderr, flush=True)
            b = blender_bake(args.blender, work, n, q, args.frames, args.topology, args.repeat,
                             args.blender_arg, args.blender_threads)
            if b["vertices"] != d["proxy_vertices"]:
                sys.exit(f"error: Blender has {b['vertices']} vertices, Drape {d['proxy_vertices']}")
            rows.append({"n": n, "quality": q, "blender": b, "drape": d})
            print(f"  blender {b['s_per_frame']:.3f} s/frame, drape "
                  f"{d['sim_ms_per_frame']:.1f} ms/frame", file=sys.stderr, flush=True)

    versions["drape_solver_fields"] = dict(solver_fields)
    (work / "results.json").write_text(json.dumps({"versions": versions, "rows": rows}, indent=1))

    print(f"Blender: {versions['blender']}, cloth mesh {args.topology}, defaults (Cotton preset), "
          f"{args.blender_threads or 'all'} threads; "
          f"Drape: {versions['drape']} ({versions['drape_git']}), {args.substeps} substeps x 1 "
          f"iteration{''.join(f', {k} {v}' for k, v in solver_fields)}; {args.frames} frames at 24 fps; best of {args.repeat}. "
          f"Penetrations: last frame / most at any frame.\n")
    print("| N | vertices | Blender quality | Blender s/frame | Blender max stretch (last frame) "
          "| Blender penetrations | Drape ms/frame | Drape max stretch (last frame) "
          "| Drape penetrations | ratio (Blender / Drape time) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        b, d = r["blender"], r["drape"]
        dlast = d["per_frame"][-1]
        ratio = b["s_per_frame"] / (d["sim_ms_per_frame"] / 1000.0)
        print(f"| {r['n']} | {b['vertices']:,} | {r['quality']} | {b['s_per_frame']:.3f} "
              f"| {pct(b['last_frame']['max_stretch'])} "
              f"| {b['last_frame']['penetrations']} / {b['summary']['penetrations']} "
              f"| {d['sim_ms_per_frame']:.1f} | {pct(dlast['max_stretch'])} "
              f"| {dlast['body_penetrations']} / {d['summary']['body_penetrations']} "
              f"| {ratio:.1f}× |")
    print("\nDetails:\n")
    print("| N | Blender quality | Blender CPU s/frame (all threads) | Blender max stretch, any frame "
          "| Blender max stretch, Drape's edges (last frame) | Blender deepest penetration "
          "| Drape max stretch, any frame | Drape self-intersections (last frame) "
          "| load (1 min) before Blender / Drape |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        b, d = r["blender"], r["drape"]
        dlast = d["per_frame"][-1]
        print(f"| {r['n']} | {r['quality']} | {b['bake_cpu_seconds'] / b['simulated_frames']:.3f} "
              f"| {pct(b['summary']['max_stretch'])} "
              f"| {pct(b['last_frame']['max_stretch_drape_edges'])} "
              f"| {b['summary']['max_penetration_m'] * 1000:.1f} mm "
              f"| {pct(d['summary']['max_stretch'])} | {dlast['self_intersections']} "
              f"| {b['load_average_1min_before']:.1f} / {d['load_average_1min_before']:.1f} |")
    print(f"\nraw results: {work / 'results.json'}", file=sys.stderr)


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Takes the screenshots of docs/patterns.md from the real window under Xvfb: the pattern
# window on Drape's T-shirt (from `drape demo --scene tshirt`), sewing, and the sewn shirt on
# the default scene's mannequin (not part of CI: run it after a visible change, then look).
# Usage: .ci/pattern-screenshots.sh [BIN]   (default target/release/drape)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/drape}
OUT=docs/images
mkdir -p "$OUT"
WORK=$(mktemp -d)
"$BIN" demo --scene default "$WORK/scene" >/dev/null 2>&1
"$BIN" demo --scene tshirt "$WORK/shirt" >/dev/null 2>&1
Xvfb :97 -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
XVFB=$!
APP=
trap 'kill $APP $XVFB 2>/dev/null || true' EXIT
export DISPLAY=:97
sleep 1
DRAPE_PRESET_DIR="$WORK/presets" "$BIN" open "$WORK/scene/scene.ron" \
  --pattern "$WORK/shirt/tshirt.ron" >"$WORK/app.log" 2>&1 &
APP=$!
for _ in $(seq 1 120); do xdotool search --name '^Drape' >/dev/null 2>&1 && break; sleep 0.5; done
sleep 4
shot() { import -window root "$1"; convert "$1" -strip -colors 128 "$1"; }
shot "$OUT/pattern-window.png"
xdotool mousemove 292 111 click 1       # Sew on the body
for _ in $(seq 1 120); do grep -q "imported garment" "$WORK/app.log" && break; sleep 1; done
sleep 2
xdotool mousemove 932 77 click 1        # close the pattern window
sleep 0.5
xdotool mousemove 16 116 click 1        # hide the skirt
sleep 3
shot "$OUT/pattern-sewn.png"
echo "wrote $OUT/pattern-window.png, $OUT/pattern-sewn.png"

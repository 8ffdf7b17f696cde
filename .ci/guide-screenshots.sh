#!/usr/bin/env bash
# Takes the screenshots of docs/guide.md from the real window under Xvfb, driving it with
# xdotool (not part of CI: run it after a visible change to the window, then look at them).
# Usage: .ci/guide-screenshots.sh [BIN]   (default target/release/drape)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/drape}
OUT=docs/images
mkdir -p "$OUT"
Xvfb :95 -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
XVFB=$!
APP=
trap 'kill $APP $XVFB 2>/dev/null || true' EXIT
export DISPLAY=:95
sleep 1
PRESETS=$(mktemp -d)
DRAPE_PRESET_DIR="$PRESETS/presets" "$BIN" >/dev/null 2>&1 &
APP=$!
for _ in $(seq 1 120); do xdotool search --name '^Drape' >/dev/null 2>&1 && break; sleep 0.5; done
sleep 3
shot() { import -window root "$1"; convert "$1" -strip -colors 128 "$1"; }
shot "$OUT/app-default.png"
xdotool mousemove 85 763 click 1        # Play
sleep 3
xdotool mousemove 56 116 click 1        # select the skirt
sleep 0.3
xdotool mousemove 91 12 click 1         # View
sleep 0.3
xdotool mousemove 140 62 click 1        # Wireframe overlay
sleep 0.3
xdotool mousemove 91 12 click 1
sleep 0.3
xdotool mousemove 150 85 click 1        # Stretch heat map
sleep 2
shot "$OUT/app-heatmap.png"
xdotool mousemove 91 12 click 1
sleep 0.3
xdotool mousemove 128 140 click 1       # Preset library
sleep 0.5
xdotool mousemove 420 380 click 1       # the Name field
sleep 0.5
# No window manager runs under Xvfb: give the window the keyboard focus by hand.
xdotool search --name '^Drape' windowfocus --sync
xdotool type --delay 80 "my_cotton"
sleep 0.5
xdotool mousemove 355 404 click 1       # Save current fabric
sleep 1
shot "$OUT/app-presets.png"
echo "wrote $OUT/app-default.png, app-heatmap.png, app-presets.png"

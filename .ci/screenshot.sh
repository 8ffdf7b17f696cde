#!/usr/bin/env bash
# Screenshot test of the real window: starts the `drape` binary (the desktop app on its
# built-in default scene) under Xvfb with Mesa's software OpenGL, waits for it to draw,
# takes a screenshot of the screen and checks that the 3D viewport is not blank: its pixels
# vary, and the garment's teal is present.
#
# Usage: .ci/screenshot.sh [OUT.png]   (DRAPE_BIN overrides the binary, target/debug/drape)
# Needs: xvfb, imagemagick, xdotool, libgl1-mesa-dri (see .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${DRAPE_BIN:-target/debug/drape}
OUT=${1:-target/screenshot.png}
LOG=target/screenshot-app.log
mkdir -p "$(dirname "$OUT")" target

DISPLAY_NUM=:97
Xvfb "$DISPLAY_NUM" -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 &
XVFB=$!
APP=
cleanup() {
  [ -n "$APP" ] && kill "$APP" 2>/dev/null || true
  kill "$XVFB" 2>/dev/null || true
}
trap cleanup EXIT
export DISPLAY=$DISPLAY_NUM
for _ in $(seq 1 50); do xdpyinfo >/dev/null 2>&1 && break; sleep 0.2; done

PRESETS=$(mktemp -d)
DRAPE_PRESET_DIR="$PRESETS/presets" RUST_LOG=info "$BIN" >"$LOG" 2>&1 &
APP=$!
WIN=
for _ in $(seq 1 120); do
  WIN=$(xdotool search --name '^Drape' 2>/dev/null | head -n1 || true)
  [ -n "$WIN" ] && break
  kill -0 "$APP" 2>/dev/null || { echo "screenshot: the app exited early"; cat "$LOG"; exit 1; }
  sleep 0.5
done
[ -n "$WIN" ] || { echo "screenshot: no Drape window after 60 s"; cat "$LOG"; exit 1; }
# Let it load the scene, simulate and draw a few frames.
sleep 6
import -window root "$OUT"
kill -0 "$APP" 2>/dev/null || { echo "screenshot: the app died"; cat "$LOG"; exit 1; }

# The viewport is the middle of the window (between the outliner, the properties panel and
# the timeline); measure a box well inside it.
BOX=600x480+330+120
STD=$(convert "$OUT" -crop "$BOX" +repage -colorspace Gray -format '%[fx:standard_deviation]' info:)
TEAL=$(convert "$OUT" -crop "$BOX" +repage -fx '(b-r>0.12)&&(g-r>0.10)' -format '%[fx:mean]' info:)
echo "screenshot: $OUT; viewport grey std-dev $STD, garment-teal fraction $TEAL"
awk -v s="$STD" -v t="$TEAL" 'BEGIN {
  if (s < 0.02) { print "screenshot: the viewport is blank (std-dev " s ")"; exit 1 }
  if (t < 0.01) { print "screenshot: the garment colour is missing (" t ")"; exit 1 }
}'
echo "screenshot: ok"

#!/usr/bin/env bash
# Screenshot of paint mode in the real window (not part of .ci/run): starts the `drape`
# binary on its built-in default scene under Xvfb, clicks the `Paint` toggle in the timeline
# bar, moves the pointer over the skirt and takes a screenshot, which shows the map colours
# and the brush circle under the pointer. Modelled on .ci/screenshot.sh.
#
# Usage: .ci/paint-screenshot.sh [OUT.png]   (default docs/images/paint-mode.png;
#   DRAPE_BIN overrides the binary, target/debug/drape; PAINT_XY and SKIRT_XY the screen
#   points of the `Paint` toggle and of the skirt, for the 1280x800 screen)
# Needs: xvfb, imagemagick, xdotool, libgl1-mesa-dri.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${DRAPE_BIN:-target/debug/drape}
OUT=${1:-docs/images/paint-mode.png}
PAINT_XY=${PAINT_XY:-"186 763"}
SKIRT_XY=${SKIRT_XY:-"585 430"}
LOG=target/paint-screenshot-app.log
mkdir -p "$(dirname "$OUT")" target

DISPLAY_NUM=:96
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
  kill -0 "$APP" 2>/dev/null || { echo "paint-screenshot: the app exited early"; cat "$LOG"; exit 1; }
  sleep 0.5
done
[ -n "$WIN" ] || { echo "paint-screenshot: no Drape window after 60 s"; cat "$LOG"; exit 1; }
# Let it load the scene and draw a few frames.
sleep 6
import -window root target/paint-screenshot-before.png
# shellcheck disable=SC2086
xdotool mousemove $PAINT_XY click 1
sleep 1
# Over the skirt, in small steps so the app sees the pointer move.
# shellcheck disable=SC2086
set -- $SKIRT_XY
for k in 10 5 0; do
  xdotool mousemove "$(($1 + k))" "$2"
  sleep 0.3
done
sleep 2
import -window root "$OUT"
kill -0 "$APP" 2>/dev/null || { echo "paint-screenshot: the app died"; cat "$LOG"; exit 1; }
# The brush ring is the only near-white thing on the skirt: look for it in a box around the
# pointer (the skirt alone at the default points).
BOX=120x120+$(($1 - 60))+$(($2 - 60))
WHITE=$(convert "$OUT" -crop "$BOX" +repage -fx '(r>0.85)&&(g>0.85)&&(b>0.85)' -format '%[fx:mean]' info:)
echo "paint-screenshot: $OUT; near-white fraction around the pointer $WHITE"
awk -v w="$WHITE" 'BEGIN { if (w < 0.005) { print "paint-screenshot: no brush ring"; exit 1 } }'
echo "paint-screenshot: ok"

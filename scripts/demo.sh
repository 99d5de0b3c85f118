#!/usr/bin/env bash
# The main job on the embedded default, over a fresh copy of the sample workspace in fixtures/.
# The copy and the state live under build/demo/, so the repository and ~/.openclaw stay untouched.
set -euo pipefail
cd "$(dirname "$0")/.."
demo=build/demo
rm -rf "$demo"
mkdir -p "$demo"
cp -R fixtures/workspace "$demo/workspace"
# Nothing of the user's own settings: every OPENCLAW_* variable is dropped before the demo's two are set
# (an OPENCLAW_CONFIG_PATH or OPENCLAW_MEMORY_EXTRA_PATHS had the demo list, print and index private
# notes; an OPENCLAW_MEMORY_QDRANT_URL had it index into the user's Qdrant server). With the state dir
# set, no file under $HOME is read for settings (no ~/.openclaw/.env, no ~/.config/openclaw/gateway.env).
for name in $(compgen -e); do case $name in OPENCLAW_*) unset "$name";; esac; done
export OPENCLAW_WORKSPACE="$PWD/$demo/workspace"
export OPENCLAW_STATE_DIR="$PWD/$demo/state"
# Each command shown as it can be typed again: a word holding more than letters, digits and ./:=@%+- quoted
# (it showed `search when are database backups taken`, which, pasted, is a usage error).
typed() { local word shown=(); for word in "$@"; do [[ $word =~ ^[A-Za-z0-9_./:=@%+-]+$ ]] && shown+=("$word") || shown+=("\"$word\""); done; echo "${shown[*]}"; }
om() { echo; echo "\$ openclaw-memory $(typed "$@")"; .venv/bin/openclaw-memory "$@"; }

om files
om doctor || true
om doctor --fix --yes
om index
om search "when are database backups taken"
echo
echo "# Chinese words are found by their characters (the keyword side: 喝 and 茶 in 喝绿茶), not by meaning:"
echo "# the model is English-only, so \"who likes green tea\" does not find this note (docs/search.md, CJK)."
om search "喝茶"
om read memory/projects/openclaw-memory.md --lines 6
om prompt --date 2026-11-30
om watchdog snapshot demo
echo "- new fact added behind the agent's back" >> "$OPENCLAW_WORKSPACE/MEMORY.md"
om watchdog verify || true
echo
echo "Demo state is in $demo/ (delete it freely)."

#!/usr/bin/env bash
# The GPU check (issue 30 §2) on a host with NVIDIA cards, in a minute or two: starts the console with
# COMPUTE_DRIVER=local on a scratch DATA_DIR, sells this host's card model (a catalogue made for the
# run, with an image of the host's own system), buys a one-card post-paid instance through the API as
# a new user, and inside it over the SSH gateway runs `nvidia-smi -L` (exactly one card) and a CUDA
# computation through the host driver's libcuda (python3 ctypes: cuInit, cuDeviceGetName, cuMemAlloc,
# a device memset, a copy back). With two cards or more, a second instance must get another card.
# Prints PASS or FAIL lines; exit status 0 only when all pass. Run as root from anywhere:
#   scripts/gpu-check.sh            (GPU_CHECK_KEEP=1 keeps the scratch folder and server log)
set -uo pipefail
cd "$(dirname "$0")/.."
fail() { echo "FAIL: $*"; exit 1; }

command -v nvidia-smi >/dev/null || fail "本机没有 nvidia-smi（NVIDIA 驱动未安装）"
nvidia-smi -L | grep -q '^GPU ' || fail "nvidia-smi -L 没有列出 GPU"
command -v bwrap >/dev/null || fail "缺少 bwrap（Debian 软件包 bubblewrap）"
[ -x node_modules/.bin/tsx ] || npm ci --no-audit --no-fund >/dev/null || fail "缺少 node_modules，npm ci 失败"
# The server only (the API): the web build is not needed.
WORK=$(mktemp -d /tmp/gpu-check.XXXXXX)
chmod 711 "$WORK"
PORT=${GPU_CHECK_PORT:-18480}
SSH_PORT=${GPU_CHECK_SSH_PORT:-18422}
export GPU_CHECK_WORK=$WORK GPU_CHECK_URL="http://127.0.0.1:$PORT"

node scripts/gpu-check.mjs catalogue >"$WORK/catalogue.json" || fail "无法生成本机 GPU 的目录"
# A process group of its own (npx, tsx and node): ended as one, the server shutting down its machines.
DATA_DIR=$WORK/data PORT=$PORT HOST=127.0.0.1 DEV_TOOLS=true COMPUTE_DRIVER=local CATALOGUE_FILE=$WORK/catalogue.json \
  SSH_GATEWAY_PORT=$SSH_PORT MACHINE_PORT=0 LOG_FORMAT=json setsid npx tsx server/src/main.ts >"$WORK/server.log" 2>&1 &
SERVER=$!
cleanup() {
  kill -TERM -- "-$SERVER" 2>/dev/null
  for _ in $(seq 30); do kill -0 -- "-$SERVER" 2>/dev/null || break; sleep 1; done
  kill -KILL -- "-$SERVER" 2>/dev/null
  # What a server cut short left mounted under the scratch folder (lxcfs, the disks), deepest first.
  grep -o " $WORK/[^ ]*" /proc/self/mountinfo | sort -r | xargs -r -n1 umount -l 2>/dev/null
  if [ -n "${GPU_CHECK_KEEP:-}" ]; then echo "scratch: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
for _ in $(seq 120); do
  curl -sf "$GPU_CHECK_URL/healthz" >/dev/null && break
  kill -0 "$SERVER" 2>/dev/null || { tail -20 "$WORK/server.log"; fail "控制台没有启动"; }
  sleep 1
done
grep -o '本机 GPU：[^"]*' "$WORK/server.log" | head -1
node scripts/gpu-check.mjs run
status=$?
[ $status -eq 0 ] || tail -30 "$WORK/server.log"
exit $status

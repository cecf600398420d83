#!/usr/bin/env bash
# Runs the image deploy/build-image.sh made, as a container runtime would, without one: unpacked with umoci, its
# entrypoint started as its user (uid 10001) in a chroot with its own PID namespace (tini is PID 1) and a read-only
# root, against a PostgreSQL database. Checks the migration command, /healthz, /livez, /readyz and the web app, then
# that SIGTERM stops it cleanly.
#
#   sudo deploy/smoke-test.sh            # DATABASE_URL (default: a fresh database on 127.0.0.1:5432, dropped after)
#
# Needs root (chroot, mounts), umoci, curl, and psql's createdb/dropdb for the default database.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
VERSION=${VERSION:-$(node -p "require('$repo/package.json').version")}
layout=${OUT:-$repo/deploy/out}/oci
port=${SMOKE_PORT:-18780}
say() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*"; }

work=$(mktemp -d "${TMPDIR:-/var/tmp}/console-smoke.XXXXXX")
db=""
pid=""
descendants() { for c in $(ps -o pid= --ppid "$1"); do echo "$c"; descendants "$c"; done; }
cleanup() {
  # A server still running (a failed check): it and its namespace's processes, by their ids.
  if [ -n "$pid" ]; then
    for p in $(descendants "$pid") "$pid"; do kill -KILL "$p" 2>/dev/null || true; done
    wait "$pid" 2>/dev/null || true
  fi
  umount -R "$work/bundle/rootfs" 2>/dev/null || true
  [ -n "$db" ] && dropdb -h 127.0.0.1 -U postgres --if-exists --force "$db" || true
  rm -rf "$work"
}
trap cleanup EXIT

if [ -z "${DATABASE_URL:-}" ]; then
  db=console_smoke_$$
  createdb -h 127.0.0.1 -U postgres "$db"
  DATABASE_URL=postgres://postgres@127.0.0.1:5432/$db
fi

say "解开镜像 $layout:$VERSION"
umoci unpack --image "$layout:$VERSION" "$work/bundle" >/dev/null
root=$work/bundle/rootfs
# The image has no /dev (mmdebstrap --skip=output/dev): a runtime makes its own there, as this script does.
mkdir -p "$root/dev"
config=$work/bundle/config.json
# The image's own command line, user, working directory and environment, as umoci wrote them into the runtime config.
mapfile -t argv < <(node -e 'for (const a of require(process.argv[1]).process.args) console.log(a)' "$config")
mapfile -t envs < <(node -e 'for (const a of require(process.argv[1]).process.env) console.log(a)' "$config")
user=$(node -p 'const u = require(process.argv[1]).process.user; `${u.uid}:${u.gid}`' "$config")
cwd=$(node -p 'require(process.argv[1]).process.cwd' "$config")
say "入口：${argv[*]}（用户 $user，目录 $cwd）"
# No compiler in the image.
for cc in gcc cc g++ clang make; do [ ! -e "$root/usr/bin/$cc" ] || { echo "镜像里有 $cc" >&2; exit 1; }; done

# A container's view: the image read-only, its own /proc, /dev, an empty /tmp and /data, the host's resolver.
run() {
  unshare --mount --pid --fork --kill-child sh -c '
    set -e
    r=$1; shift
    mount --bind "$r" "$r" && mount -o remount,bind,ro "$r"
    mount -t proc proc "$r/proc"
    mount --rbind /dev "$r/dev"
    mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"
    mount -t tmpfs -o mode=0750,uid=10001,gid=10001 tmpfs "$r/data"
    exec chroot --userspec="$USERSPEC" "$r" /usr/bin/env -C "$CWD" "$@"' sh "$root" "$@"
}
export USERSPEC=$user CWD=$cwd
common=(-i "${envs[@]}" DATABASE_URL="$DATABASE_URL" PORT="$port" MACHINE_PORT=$((port + 1)) SSH_GATEWAY_PORT=0
  PAYMENT_DRIVER=real COMPUTE_DRIVER=simulated LOG_FORMAT=json)

say "迁移（node --import tsx server/src/cli/migrate.ts）"
t=$SECONDS
run /usr/bin/env "${common[@]}" /usr/local/bin/node --import tsx server/src/cli/migrate.ts
say "迁移用时 $((SECONDS - t)) 秒"

say "启动控制台（端口 $port）"
! curl -s -o /dev/null "http://127.0.0.1:$port/healthz" || { echo "端口 $port 已被占用（SMOKE_PORT 换一个）" >&2; exit 1; }
t=$SECONDS
run /usr/bin/env "${common[@]}" "${argv[@]}" >"$work/server.log" 2>&1 &
pid=$!
for _ in $(seq 1 120); do
  curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { tail -30 "$work/server.log"; echo "控制台退出了" >&2; exit 1; }
  sleep 1
done
say "启动用时 $((SECONDS - t)) 秒"
fail=0
for p in /healthz /livez /readyz; do
  code=$(curl -s -o "$work/body" -w '%{http_code}' "http://127.0.0.1:$port$p")
  say "GET $p → $code $(head -c 200 "$work/body")"
  [ "$code" = 200 ] || fail=1
done
curl -fsS "http://127.0.0.1:$port/" | grep -q '<div id="root"' && say "GET / → 前端页面" || { say "GET / 没有返回前端页面"; fail=1; }
{ grep -m3 -E '控制台已启动|计算驱动|开发工具' "$work/server.log" || true; } | node -e 'require("readline").createInterface({input: process.stdin}).on("line", (l) => { try { console.log("  日志：" + JSON.parse(l).msg) } catch { console.log("  日志：" + l) } })'

say "SIGTERM"
t=$SECONDS
# tini (PID 1 of the container's namespace) among the started process's descendants: what a runtime signals.
tini=$(for p in $(descendants "$pid"); do [ "$(ps -o comm= -p "$p")" != tini ] || echo "$p"; done | head -n1)
[ -n "$tini" ] || { echo "找不到 tini 进程" >&2; exit 1; }
kill -TERM "$tini"
rc=0
wait "$pid" || rc=$?
pid=""
say "退出码 $rc，用时 $((SECONDS - t)) 秒"
[ "$rc" = 0 ] || { tail -20 "$work/server.log"; fail=1; }
[ "$fail" = 0 ] && say "通过" || { say "失败"; tail -40 "$work/server.log"; exit 1; }

#!/usr/bin/env bash
# The console's container image, built from Debian's packages (no base image is pulled from anywhere):
#
#   sudo deploy/build-image.sh                 # or: npm run deploy:image
#   PUSH=docker://registry.example.com/console/console:0.1.0 sudo -E deploy/build-image.sh
#
# Writes an OCI image layout (OUT, default deploy/out/oci) holding the tag VERSION (package.json's version) of
# the image IMAGE_NAME, two layers:
#   1. the system: a minimal Debian 12 (mmdebstrap --variant=minbase: the essential set and apt, no compiler) with
#      ca-certificates and tini (PID 1: forwards SIGTERM to node, reaps children), the user `console` (uid/gid
#      10001), /data for it, and Node.js 20 — Debian 12's own nodejs is 18, older than the console needs
#      (package.json engines >= 20.19), and no Node.js 20 package can be reached from a build machine with only
#      Debian's and npm's registries, so the build host's Node 20 binary is copied in (it needs only glibc and
#      libstdc++, both in the system layer; NODE_BIN to take another one);
#   2. the application under /app: the server's and contract's TypeScript sources, the migrations, the default
#      catalogue, the built web app (web/dist, built first if missing) and the node_modules packages the server
#      needs at run time (deploy/runtime-modules.ts: the server's and contract's dependencies plus tsx, copied
#      from this checkout's node_modules, native modules already built for this Debian 12).
# The image runs `tini -- node --import tsx server/src/main.ts` as uid 10001 in /app, HOST=0.0.0.0, port 8080.
# Its migrations alone: the same image with the command `node --import tsx server/src/cli/migrate.ts`.
#
# Needs root (mmdebstrap's root mode), mmdebstrap, umoci, and skopeo only for PUSH. DEBIAN_MIRROR and
# DEBIAN_SECURITY_MIRROR as for `npm run images`. Run niced on a shared machine.
set -euo pipefail

# The name operators push and the Kubernetes manifests use (deploy/k8s/kustomization.yaml; deploy.test.ts checks both).
IMAGE_NAME=console/console
repo=$(cd "$(dirname "$0")/.." && pwd)
VERSION=${VERSION:-$(node -p "require('$repo/package.json').version")}
OUT=${OUT:-$repo/deploy/out}
NODE_BIN=${NODE_BIN:-$(readlink -f "$(command -v node)")}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DEBIAN_SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
layout=$OUT/oci
uid=10001

say() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*"; }

[ "$(id -u)" = 0 ] || { echo "deploy/build-image.sh 需要 root（mmdebstrap 的 root 模式）" >&2; exit 1; }
for tool in mmdebstrap umoci tar; do command -v "$tool" >/dev/null || { echo "缺少 $tool（apt-get install $tool）" >&2; exit 1; }; done
"$NODE_BIN" -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' || { echo "$NODE_BIN 不是 Node.js 20 或更新版本" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/var/tmp}/console-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
started=$SECONDS

# --- the web app ----------------------------------------------------------------------------------------------
if [ ! -f "$repo/web/dist/index.html" ]; then
  say "web/dist 不存在：构建前端（npm run build）"
  (cd "$repo" && nice -n 10 npm run build)
fi

# --- layer 2: /app ----------------------------------------------------------------------------------------------
say "准备应用层（/app）"
app=$work/app/app
mkdir -p "$app/web"
cd "$repo"
# Sources as the checkout has them (tracked and new files, not ignored ones), without tests and benchmarks.
{
  printf '%s\n' package.json package-lock.json tsconfig.base.json
  git ls-files --cached --others --exclude-standard -- contract server |
    grep -Ev '(\.test\.tsx?$|^server/(test|bench|lint)/|^contract/.*\.test\.|/vitest[^/]*\.ts$|^server/drizzle\.config\.ts$)'
} | while read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done >"$work/files"
tar -cf - -T "$work/files" | tar -xf - -C "$app"
# web/dist is a link to the current build (web/scripts/build.ts): its files, not the link.
cp -rL web/dist "$app/web/dist"
# node_modules: each runtime package's own files (its nested node_modules are listed separately when needed);
# the link node_modules/@console/contract stays a link into /app/contract. Other platforms' prebuilt binaries stay out.
npx --no-install tsx deploy/runtime-modules.ts "$repo" >"$work/modules"
while read -r key; do
  if [ -L "$key" ]; then
    mkdir -p "$app/$(dirname "$key")" && cp -P "$key" "$app/$key"
  else
    mkdir -p "$app/$key"
    tar -C "$key" --exclude=./node_modules --exclude='./prebuilds/darwin-*' --exclude='./prebuilds/win32-*' -cf - . | tar -xf - -C "$app/$key"
  fi
done <"$work/modules"
say "应用层：$(wc -l <"$work/files") 个源文件，$(wc -l <"$work/modules") 个运行时依赖包，$(du -sh "$app" | cut -f1)"
# Owned by root, not writable by the console's user: what it writes goes to /data and /tmp.
tar --numeric-owner --owner=0 --group=0 --mode='u+rwX,go+rX,go-w' -C "$work/app" -cf "$work/app.tar" ./app

# --- layer 1: the system ---------------------------------------------------------------------------------------
say "构建系统层（mmdebstrap，Debian 12 minbase + ca-certificates + tini + Node.js $("$NODE_BIN" --version)）"
cp "$NODE_BIN" "$work/node"
customize=$(
  cat <<EOF
set -e
install -m 0755 '$work/node' "\$1/usr/local/bin/node"
echo 'console:x:$uid:$uid:console:/data:/usr/sbin/nologin' >> "\$1/etc/passwd"
echo 'console:x:$uid:' >> "\$1/etc/group"
install -d -m 0750 -o $uid -g $uid "\$1/data"
rm -f "\$1/etc/resolv.conf" "\$1/etc/hostname"
rm -rf "\$1"/var/lib/apt/lists/* "\$1"/var/cache/apt/* "\$1"/var/log/apt/* "\$1"/var/log/dpkg.log
find "\$1/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
find "\$1/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "\$1"/usr/share/man/* "\$1"/usr/share/info/* "\$1"/usr/share/locale/*
EOF
)
slim="printf '%s\\n' 'path-exclude=/usr/share/doc/*' 'path-include=/usr/share/doc/*/copyright' 'path-exclude=/usr/share/man/*' 'path-exclude=/usr/share/info/*' 'path-exclude=/usr/share/locale/*' > \"\$1/etc/dpkg/dpkg.cfg.d/console-slim\""
TMPDIR=$work LC_ALL=C.UTF-8 nice -n 10 mmdebstrap --variant=minbase --mode=root --format=tar --skip=output/dev \
  --include=ca-certificates,tini \
  --essential-hook="$slim" --customize-hook="$customize" \
  bookworm "$work/system.tar" \
  "deb $DEBIAN_MIRROR bookworm main" "deb $DEBIAN_MIRROR bookworm-updates main" "deb $DEBIAN_SECURITY_MIRROR bookworm-security main" \
  2>"$work/mmdebstrap.log" || { grep -E '^(E|W):' "$work/mmdebstrap.log" >&2 || tail -20 "$work/mmdebstrap.log" >&2; exit 1; }
# No compiler in the image (what the brief of the image promises operators): fail the build if one came in.
if tar -tf "$work/system.tar" | grep -Eq '^\./usr/bin/(gcc|cc|g\+\+|c\+\+|clang|make)(-[0-9.]+)?$'; then
  echo "系统层里有编译器：检查 --include 的软件包" >&2
  exit 1
fi

# --- the OCI image --------------------------------------------------------------------------------------------
say "写入 OCI 镜像 $layout:$VERSION（$IMAGE_NAME:$VERSION）"
mkdir -p "$OUT"
[ -f "$layout/index.json" ] || umoci init --layout "$layout"
umoci rm --image "$layout:$VERSION" 2>/dev/null || true
umoci new --image "$layout:$VERSION"
umoci raw add-layer --image "$layout:$VERSION" --history.created_by "mmdebstrap --variant=minbase bookworm + ca-certificates tini; node $("$NODE_BIN" --version)" "$work/system.tar"
umoci raw add-layer --image "$layout:$VERSION" --history.created_by "deploy/build-image.sh: /app ($(git rev-parse --short HEAD 2>/dev/null || echo '?'))" "$work/app.tar"
umoci config --image "$layout:$VERSION" \
  --config.user "$uid:$uid" \
  --config.workingdir /app \
  --config.entrypoint /usr/bin/tini --config.entrypoint -- \
  --config.cmd /usr/local/bin/node --config.cmd --import --config.cmd tsx --config.cmd server/src/main.ts \
  --config.env PATH=/usr/local/bin:/usr/bin:/bin \
  --config.env NODE_ENV=production \
  --config.env HOST=0.0.0.0 \
  --config.env PORT=8080 \
  --config.env DATA_DIR=/data \
  --config.exposedports 8080/tcp \
  --config.stopsignal SIGTERM \
  --config.label "org.opencontainers.image.title=$IMAGE_NAME" \
  --config.label "org.opencontainers.image.version=$VERSION" \
  --manifest.annotation "org.opencontainers.image.ref.name=$VERSION" \
  --manifest.annotation "org.opencontainers.image.title=$IMAGE_NAME"
umoci gc --layout "$layout"
say "完成（$((SECONDS - started)) 秒）：$layout:$VERSION，层：系统 $(du -h "$work/system.tar" | cut -f1)（未压缩），应用 $(du -h "$work/app.tar" | cut -f1)（未压缩）"

if [ -n "${PUSH:-}" ]; then
  command -v skopeo >/dev/null || { echo "PUSH 需要 skopeo（apt-get install skopeo）" >&2; exit 1; }
  say "推送到 $PUSH"
  # PUSH_CREDS=user:password for a private registry; PUSH_TLS_VERIFY=false for one on plain HTTP.
  skopeo copy ${PUSH_CREDS:+--dest-creds "$PUSH_CREDS"} ${PUSH_TLS_VERIFY:+--dest-tls-verify="$PUSH_TLS_VERIFY"} "oci:$layout:$VERSION" "$PUSH"
fi

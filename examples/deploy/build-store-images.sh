#!/usr/bin/env bash
# Builds stand-ins for the public PostgreSQL and Redis images from this
# machine's own PostgreSQL and Redis binaries, for a host that cannot pull
# images (CI without a registry). Each image is `FROM scratch` with the
# binaries, the shared libraries ldd lists for them, and a POSIX shell; it
# honours what compose.yaml asks of the public images:
#
#   PostgreSQL: POSTGRES_USER, POSTGRES_PASSWORD and POSTGRES_DB on the
#   first start, data in /var/lib/postgresql/data, pg_isready inside,
#   password authentication from other containers.
#   Redis: `redis-server ARGS...` as the command, data in /data, redis-cli
#   inside, reachable from other containers (protected mode off, as the
#   public image has it).
#
#   examples/deploy/build-store-images.sh [POSTGRES_IMAGE [REDIS_IMAGE]]
#     # defaults localhost/validmail-postgres:local, localhost/validmail-redis:local
#
# An image that exists already is kept while it holds the same files: it
# is labelled with a digest of this script and of the binaries and
# libraries it copies, so an upgrade of the host's packages (or a change
# here) builds it again; REBUILD=1 builds it again anyway. Needs the host's
# PostgreSQL server (postgres, initdb, pg_isready; PG_BINDIR or
# pg_config --bindir locates them) and redis-server and redis-cli.
set -euo pipefail
pg_image="${1:-localhost/validmail-postgres:local}"
redis_image="${2:-localhost/validmail-redis:local}"
engine="${CONTAINER_ENGINE:-podman}"
build_args=()
[ "$engine" = podman ] && build_args+=(--runtime runc)

label=org.validmail.stand-in.digest

# digest FILE...: a digest of this script, the files and every shared
# library ldd lists for them.
digest() {
  local f
  {
    sha256sum "$0"
    for f in "$@"; do
      sha256sum "$f"
      ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u | xargs -r sha256sum -- 2>/dev/null
    done
  } | sha256sum | cut -c1-32
}

# current IMAGE DIGEST: the image exists and was built from the same files.
current() {
  [ "${REBUILD:-0}" != 1 ] &&
    [ "$("$engine" image inspect --format "{{index .Config.Labels \"$label\"}}" "$1" 2>/dev/null)" = "$2" ]
}

pg_bindir() {
  local bindir
  bindir="${PG_BINDIR:-$(pg_config --bindir 2>/dev/null || true)}"
  [ -x "$bindir/postgres" ] || bindir=$(dirname "$(readlink -f "$(command -v postgres)")")
  [ -x "$bindir/postgres" ] && [ -x "$bindir/initdb" ] || { echo "no PostgreSQL server binaries (set PG_BINDIR)" >&2; return 1; }
  echo "$bindir"
}

# copy_binaries ROOTFS FILE...: each file at its own path under ROOTFS,
# with every shared library ldd lists for it and the dynamic loader.
copy_binaries() {
  local root="$1" f lib
  shift
  for f in "$@"; do
    cp -L --parents "$f" "$root"
    for lib in $(ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
      [ -e "$root$lib" ] || cp -L --parents "$lib" "$root"
    done
  done
}

# base_rootfs ROOTFS USER HOME: a shell, the passwd entry of the user the
# image runs as (uid and gid 999) and a writable /tmp.
base_rootfs() {
  local root="$1"
  mkdir -p "$root/etc" "$root/tmp" "$root/bin"
  chmod 1777 "$root/tmp"
  copy_binaries "$root" /bin/sh
  printf 'root:x:0:0:root:/root:/bin/sh\n%s:x:999:999:%s:%s:/bin/sh\n' "$2" "$2" "$3" >"$root/etc/passwd"
  printf 'root:x:0:\n%s:x:999:\n' "$2" >"$root/etc/group"
}

build_postgres() {
  local ctx="$1" bindir="$2" share pkglib
  share=$("$bindir/pg_config" --sharedir 2>/dev/null || echo "/usr/share/postgresql/$(basename "$(dirname "$bindir")")")
  pkglib=$("$bindir/pg_config" --pkglibdir 2>/dev/null || echo "$(dirname "$bindir")/lib")
  local root="$ctx/rootfs"
  base_rootfs "$root" postgres /var/lib/postgresql
  copy_binaries "$root" "$bindir/postgres" "$bindir/initdb" "$bindir/pg_isready"
  # The modules the server loads itself (PL/pgSQL, text search, encoding
  # conversions); not the JIT, which is switched off.
  mkdir -p "$root$pkglib"
  local so
  for so in "$pkglib"/*.so; do
    case "$(basename "$so")" in llvmjit*) continue ;; esac
    copy_binaries "$root" "$so"
  done
  mkdir -p "$root$share"
  cp -a "$share/." "$root$share/"
  [ -d /usr/share/zoneinfo ] && { mkdir -p "$root/usr/share"; cp -a /usr/share/zoneinfo "$root/usr/share/"; }
  # COPY gives files to root: what the server writes comes from a tree
  # of its own, copied to its user.
  mkdir -p "$ctx/owned/var/lib/postgresql/data" "$ctx/owned/var/run/postgresql" "$root/usr/local/bin"
  chmod 700 "$ctx/owned/var/lib/postgresql/data"
  # The first start makes the cluster, its user and its database; every
  # start then runs the server in the foreground.
  cat >"$root/usr/local/bin/postgres-entry" <<'EOF'
#!/bin/sh
set -eu
: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
user="${POSTGRES_USER:-postgres}"
db="${POSTGRES_DB:-$user}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  printf '%s\n' "$POSTGRES_PASSWORD" |
    initdb -D "$PGDATA" -U "$user" --pwfile=/dev/stdin -E UTF8 --locale=C \
      --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  printf 'host all all all scram-sha-256\n' >>"$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    printf 'CREATE DATABASE "%s";\n' "$db" | postgres --single -D "$PGDATA" -j postgres >/dev/null
  fi
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c jit=off "$@"
EOF
  chmod 755 "$root/usr/local/bin/postgres-entry"
  cat >"$ctx/Containerfile" <<EOF
FROM scratch
COPY rootfs/ /
COPY --chown=999:999 owned/ /
ENV PATH=$bindir:/usr/local/bin:/usr/bin:/bin \\
    PGDATA=/var/lib/postgresql/data \\
    TZ=UTC
USER 999:999
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["/usr/local/bin/postgres-entry"]
EOF
}

build_redis() {
  local ctx="$1" root="$1/rootfs"
  base_rootfs "$root" redis /data
  copy_binaries "$root" "$(command -v redis-server)" "$(command -v redis-cli)"
  mkdir -p "$ctx/owned/data" "$root/usr/local/bin"
  # As the public image: reachable from other containers without a
  # password when started without a configuration file.
  cat >"$root/usr/local/bin/redis-entry" <<'EOF'
#!/bin/sh
set -eu
if [ "${1:-}" = redis-server ]; then
  shift
  exec redis-server "$@" --protected-mode no
fi
exec "$@"
EOF
  chmod 755 "$root/usr/local/bin/redis-entry"
  cat >"$ctx/Containerfile" <<'EOF'
FROM scratch
COPY rootfs/ /
COPY --chown=999:999 owned/ /
ENV PATH=/usr/local/bin:/usr/bin:/bin
USER 999:999
WORKDIR /data
EXPOSE 6379
ENTRYPOINT ["/usr/local/bin/redis-entry"]
CMD ["redis-server"]
EOF
}

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
bindir=$(pg_bindir)
pg_digest=$(digest "$bindir/postgres" "$bindir/initdb" "$bindir/pg_isready")
if ! current "$pg_image" "$pg_digest"; then
  mkdir -p "$tmp/postgres"
  build_postgres "$tmp/postgres" "$bindir"
  "$engine" build "${build_args[@]}" -q --label "$label=$pg_digest" -t "$pg_image" "$tmp/postgres" >/dev/null
fi
redis_digest=$(digest "$(command -v redis-server)" "$(command -v redis-cli)")
if ! current "$redis_image" "$redis_digest"; then
  mkdir -p "$tmp/redis"
  build_redis "$tmp/redis"
  "$engine" build "${build_args[@]}" -q --label "$label=$redis_digest" -t "$redis_image" "$tmp/redis" >/dev/null
fi
echo "$pg_image $redis_image"

#!/usr/bin/env bash
# Brings compose.yaml up as an operator would, on a host that cannot pull
# images: the service's image built from this checkout, PostgreSQL and
# Redis from stand-ins built from the host's own binaries
# (build-store-images.sh). It then checks that both instances answer
# /readyz with 200, creates an account with the documented command, and
# validates an address through each instance with its key. Everything it
# started is taken down again, volumes included, whatever the outcome.
#
#   examples/deploy/check-compose.sh
#
# VALIDMAIL_IMAGE names an image built already (skipping the build);
# VALIDMAIL_POSTGRES_IMAGE and VALIDMAIL_REDIS_IMAGE name images to use in
# place of the stand-ins. The instances publish on the host's ports
# 18181/18182 (metrics 18191/18192) unless VALIDMAIL_PORT_1, ... say
# otherwise. COMPOSE picks the tool (default podman-compose; "docker
# compose" works too).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
compose_cmd="${COMPOSE:-podman-compose}"
read -r -a compose <<<"$compose_cmd"
project="validmail-check-$$"
# Debian's podman runs containers with crun by default, which refuses the
# compose file's ulimits (setrlimit: operation not permitted) where runc
# sets them: podman-compose has no runtime option, so point podman at a
# configuration naming runc, unless the caller gave one
# (CONTAINERS_CONF, or PODMAN_RUNTIME=crun to keep crun).
case "$compose_cmd" in podman-compose*)
  if [ -z "${CONTAINERS_CONF:-}" ] && command -v runc >/dev/null 2>&1 && [ "${PODMAN_RUNTIME:-runc}" = runc ]; then
    containers_conf=$(mktemp)
    printf '[engine]\nruntime = "runc"\n' >"$containers_conf"
    export CONTAINERS_CONF="$containers_conf"
  fi ;;
esac
export VALIDMAIL_PORT_1="${VALIDMAIL_PORT_1:-18181}" VALIDMAIL_PORT_2="${VALIDMAIL_PORT_2:-18182}"
export VALIDMAIL_METRICS_PORT_1="${VALIDMAIL_METRICS_PORT_1:-18191}" VALIDMAIL_METRICS_PORT_2="${VALIDMAIL_METRICS_PORT_2:-18192}"

if [ -z "${VALIDMAIL_IMAGE:-}" ]; then
  export VALIDMAIL_IMAGE=localhost/validmaild:compose-check
  "$here/build-image.sh" "$VALIDMAIL_IMAGE" >/dev/null
fi
if [ -z "${VALIDMAIL_POSTGRES_IMAGE:-}" ] || [ -z "${VALIDMAIL_REDIS_IMAGE:-}" ]; then
  read -r pg_image redis_image < <("$here/build-store-images.sh")
  export VALIDMAIL_POSTGRES_IMAGE="${VALIDMAIL_POSTGRES_IMAGE:-$pg_image}"
  export VALIDMAIL_REDIS_IMAGE="${VALIDMAIL_REDIS_IMAGE:-$redis_image}"
fi

cd "$here"
# Every compose command has a bound (seconds, LIMIT or 300): a pull that
# hangs, an exec into a container that never answers.
run_compose() { timeout -k 10 "${LIMIT:-300}" "${compose[@]}" -p "$project" -f compose.yaml "$@"; }
logs=$(mktemp)
cleanup() {
  status=$?
  if [ "$status" != 0 ]; then
    echo "---- compose logs ----"
    for svc in validmaild-1 validmaild-2 postgres redis; do
      echo "-- $svc"
      LIMIT=60 run_compose logs "$svc" 2>&1 | tail -20 || true
    done
    # Its command lines carry the containers' environment: no passwords.
    [ -s "$logs" ] && { echo "-- $compose_cmd up"; tail -30 "$logs" | sed -E 's#(://[^:/@ ]*:)[^@ ]*@#\1***@#g; s#(PASSWORD=)[^ ]*#\1***#g'; }
  fi
  # podman-compose stops the containers one after another.
  LIMIT=420 run_compose down -v -t 75 >/dev/null 2>&1 || true
  # podman-compose 1.0 leaves the project's network behind.
  case "$compose_cmd" in podman-compose*) podman network rm -f "${project}_default" >/dev/null 2>&1 || true ;; esac
  rm -f "$logs" ${containers_conf:+"$containers_conf"}
  exit "$status"
}
trap cleanup EXIT

run_compose up -d >"$logs" 2>&1 || { echo "$compose_cmd up failed"; exit 1; }
# podman-compose 1.0 exits 0 when a container could not be created.
case "$compose_cmd" in podman-compose*)
  for svc in postgres redis validmaild-1 validmaild-2; do
    podman container exists "${project}_${svc}_1" || { echo "$compose_cmd up did not create $svc"; exit 1; }
  done ;;
esac

# The instances wait for PostgreSQL themselves; give the first start (a
# new cluster, the schema's migrations, a loaded machine) two minutes.
ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' -m 5 "http://127.0.0.1:$1/readyz")" = 200 ]; }
for port in "$VALIDMAIL_PORT_1" "$VALIDMAIL_PORT_2"; do
  for _ in $(seq 1 240); do
    ready "$port" && break
    sleep 0.5
  done
  ready "$port" || { echo "the instance on :$port does not answer /readyz with 200"; exit 1; }
  echo "readyz :$port: 200"
done

# The documented way to create the first account: the command reads the
# store from the container's environment.
created=$(run_compose exec -T validmaild-1 /validmaild account create -email ops@example.org)
key=$(printf '%s' "$created" | sed -n 's/.*"api_key": *"\([^"]*\)".*/\1/p')
# The output holds the key: say what it printed without it.
[ -n "$key" ] || { echo "account create printed no key (${#created} bytes)"; exit 1; }

# A reserved domain needs no DNS: the verdict comes from the store-backed,
# authenticated, charged path of each instance.
for port in "$VALIDMAIL_PORT_1" "$VALIDMAIL_PORT_2"; do
  body=$(curl -fsS -m 10 -H "x-api-key: $key" "http://127.0.0.1:$port/validate?email=jane@example.com")
  case "$body" in *'"status":"INVALID"'*) ;; *) echo "unexpected validation answer on :$port: $body"; exit 1 ;; esac
  echo "validate :$port: $body"
done
# Both instances charged the one account in the shared store.
acct=$(curl -fsS -m 10 -H "x-api-key: $key" "http://127.0.0.1:$VALIDMAIL_PORT_1/api/v1/account")
case "$acct" in *'"balance":298'*) ;; *) echo "unexpected account answer: $acct"; exit 1 ;; esac

# Redis, for deployments of the Redis store, answers inside the network.
# (podman-compose prints its own lines around the command's.)
pong=$(run_compose exec -T redis redis-cli ping)
grep -qx PONG <<<"$pong" || { echo "redis does not answer: $pong"; exit 1; }
echo "compose: both instances ready and validating on one store, Redis answering"

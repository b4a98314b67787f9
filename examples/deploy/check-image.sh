#!/usr/bin/env bash
# Builds the image and proves it runs: the container starts on the host's
# network against a PostgreSQL deployment, answers /healthz and
# an authenticated GET /validate, and stops cleanly on SIGTERM. Only
# loopback is reached.
#
#   VALIDMAIL_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
#     examples/deploy/check-image.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
image=localhost/validmaild:check
pg="${VALIDMAIL_TEST_POSTGRES:?set VALIDMAIL_TEST_POSTGRES}"
port="${CHECK_PORT:-18089}"
schema="image_check_$$"
key="vm_live_$(head -c 64 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c 43)"
name="validmaild-check-$$"

"$here/build-image.sh" "$image" >/dev/null
store="$pg"
case "$store" in *\?*) store="$store&schema=$schema" ;; *) store="$store?schema=$schema" ;; esac

cleanup() {
  podman rm -f "$name" >/dev/null 2>&1 || true
  psql "$pg" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1 || true
}
trap cleanup EXIT

podman run -d --name "$name" --runtime runc --network host \
  --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 \
  -e VALIDMAIL_ADDR="127.0.0.1:$port" \
  -e VALIDMAIL_STORE="$store" \
  -e VALIDMAIL_DNS=127.0.0.1:1 \
  -e VALIDMAIL_BOOTSTRAP_EMAIL=ops@example.org \
  -e VALIDMAIL_BOOTSTRAP_KEY="$key" \
  "$image" >/dev/null

for _ in $(seq 1 120); do
  curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.5
done
echo "healthz: $(curl -fsS "http://127.0.0.1:$port/healthz")"
# The container runs as the unprivileged user.
uid=$(podman inspect -f '{{.Config.User}}' "$name")
[ "$uid" = "65532:65532" ] || { echo "image runs as '$uid', want 65532:65532"; exit 1; }
# A reserved domain needs no DNS: the answer comes from the store-backed,
# authenticated, charged path of the real API.
body=$(curl -fsS -H "x-api-key: $key" "http://127.0.0.1:$port/validate?email=jane@example.com")
echo "validate: $body"
case "$body" in *'"status":"INVALID"'*) ;; *) echo "unexpected validation answer"; exit 1 ;; esac
acct=$(curl -fsS -H "x-api-key: $key" "http://127.0.0.1:$port/api/v1/account")
case "$acct" in *'"balance":299'*) ;; *) echo "unexpected account answer: $acct"; exit 1 ;; esac
podman stop -t 60 "$name" >/dev/null
code=$(podman inspect -f '{{.State.ExitCode}}' "$name")
[ "$code" = 0 ] || { echo "exit code $code after SIGTERM"; podman logs "$name" | tail -20; exit 1; }
echo "image: healthz, validate, account and a clean stop on SIGTERM"

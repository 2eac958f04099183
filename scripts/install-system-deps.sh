#!/usr/bin/env bash
# System packages the server tests drive as real clients and servers: psql and a PostgreSQL
# server with postgres_fdw, a JDK and the PostgreSQL JDBC driver, openssl (TLS test certs).
# Installs only what is missing (Debian/Ubuntu, apt); a no-op on a machine that has them.
set -euo pipefail
need=()
command -v psql >/dev/null || need+=(postgresql-client)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
ls /usr/lib/postgresql/*/lib/postgres_fdw.so >/dev/null 2>&1 || need+=(postgresql)
command -v javac >/dev/null || need+=(default-jdk-headless)
[ -f /usr/share/java/postgresql.jar ] || need+=(libpostgresql-jdbc-java)
command -v openssl >/dev/null || need+=(openssl)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
echo "installing system packages for the server tests: ${need[*]}"
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# the Debian package starts a cluster of its own; the tests start theirs on free ports
$sudo systemctl disable --now postgresql >/dev/null 2>&1 || true

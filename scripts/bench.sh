#!/bin/sh
# Runs berth's benchmark (test/bench) and writes bench/report.md.
# Usage: scripts/bench.sh [-n RUNS] [-pods N] [-pull=false] [-runtimes=false] [-only=concurrency] [-conc=1,10,50] [-conc-pods=60]
#        (root; `make bench` calls it, after make containerd2-bin)
# Exits non-zero only if the benchmark program fails: the numbers are a
# report, never an assertion.
set -eu
cd "$(dirname "$0")/.."
GO="${GO:-go}"
# `make bench` has just built bin/; when run directly, build first.
if [ -z "${MAKELEVEL:-}" ]; then
	make build
fi
exec "$GO" run ./test/bench -o bench/report.md "$@"

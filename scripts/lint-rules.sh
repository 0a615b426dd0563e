#!/bin/sh
# Checks that .golangci.yml's depguard rules still fire (`make vet` calls it):
# a scratch module with berth's module path holds one forbidden import per
# rule and denied package, and golangci-lint must report each of them. A rule
# whose file globs or package paths stop matching fails here, not silently.
# Usage: scripts/lint-rules.sh GOLANGCI_LINT CONFIG
set -eu
lint=$(realpath "$1")
config=$(realpath "$2")
mod=github.com/berth-dev/berth
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

printf 'module %s\n\ngo 1.26\n' "$mod" >"$dir/go.mod"

# pkg DIR [IMPORT]: a package in DIR, importing $mod/IMPORT when given.
pkg() {
	mkdir -p "$dir/$1"
	name=$(basename "$1" | tr -d -)
	if [ $# -eq 1 ]; then
		printf 'package %s\n' "$name" >"$dir/$1/$name.go"
	else
		printf 'package %s\n\nimport _ "%s/%s"\n' "$name" "$mod" "$2" >"$dir/$1/$(basename "$2").go"
	fi
}

# RULE DIR IMPORT: what each rule of .golangci.yml must refuse.
cases='criserver internal/criserver internal/oci
criserver internal/criserver internal/network
criserver internal/criserver internal/runc
criserver internal/criserver internal/store
agent internal/agent internal/pod
agent internal/agent/plan internal/network
agent internal/agent internal/oci
agent internal/agent internal/image
workload internal/agent/workload internal/agent/criclient
workload internal/agent/workload internal/agent/workloadstore
workload internal/agent/workload internal/store'

for p in oci network runc store pod image agent/criclient agent/workloadstore; do
	pkg "internal/$p"
done
echo "$cases" | while read -r _ from import; do
	pkg "$from" "$import"
done

out=$(cd "$dir" && GOFLAGS= "$lint" run --config "$config" --enable-only depguard \
	--max-issues-per-linter=0 --max-same-issues=0 ./... 2>&1) && status=0 || status=$?
if [ "$status" -eq 0 ]; then
	echo "lint-rules: golangci-lint reported no layering violation in the scratch module:" >&2
	echo "$out" >&2
	exit 1
fi
missing=$(echo "$cases" | while read -r rule from import; do
	if ! echo "$out" | grep -qF "import '$mod/$import' is not allowed from list '$rule'"; then
		echo "  rule $rule: $from importing $import"
	fi
done)
if [ -n "$missing" ]; then
	echo "lint-rules: .golangci.yml's depguard rules no longer refuse:" >&2
	echo "$missing" >&2
	echo "golangci-lint said:" >&2
	echo "$out" >&2
	exit 1
fi
echo "lint-rules: $(echo "$cases" | wc -l) forbidden imports refused"

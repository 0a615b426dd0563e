#!/bin/bash
# The checks of make test-vm, run inside the VM (systemd PID 1, cgroup v2
# only) by its one-shot unit: SHARE holds bin/, busybox-oci.tar,
# berth.service, pods/ and results/. Each check writes "PASS name" or
# "FAIL name: why" to results/checks; results/status is pass or fail;
# results/journal.txt is the journal's tail. Power-off follows (the unit's
# SuccessAction/FailureAction), whatever happens here.
set -uo pipefail

share=${1:?usage: inside.sh SHARE}
res=$share/results
pods=$share/pods
exec > >(tee -a "$res/log") 2>&1
date +%s >"$res/started"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

failed=0
t0=$(date +%s)
log() { echo "[$(($(date +%s) - t0))s] $*"; }
pass() { echo "PASS $1" >>"$res/checks"; log "PASS $1"; }
fail() { echo "FAIL $1: $2" >>"$res/checks"; log "FAIL $1: $2"; failed=1; }

# berth is the CLI with a bound: a call that has not answered in 60 s
# fails, and the daemon writes its goroutines to the journal (SIGUSR1).
berth() {
	timeout 60 /usr/local/bin/berth "$@"
	local rc=$?
	if [ "$rc" = 124 ]; then
		log "berth $* did not answer within 60s: the daemon's goroutines go to results/berth.log"
		systemctl kill --kill-whom=main -s USR1 berth 2>/dev/null
	fi
	return "$rc"
}

# save_results: the journals and the status, for the host.
save_results() {
	journalctl -b --no-pager | tail -n 200 >"$res/journal.txt"
	journalctl -b -u berth --no-pager >"$res/berth.log" 2>&1
	journalctl -b -u kubelet --no-pager >"$res/kubelet.log" 2>&1
	if [ "$failed" = 0 ] && ! grep -q '^FAIL' "$res/checks"; then echo pass >"$res/status"; else echo fail >"$res/status"; fi
	sync
}

# watchdog SECONDS: past that much uptime the suite is stuck: the daemon's
# goroutines and the journals are saved and the VM powers off, well before
# run.sh's VM_TIMEOUT kills it with nothing saved.
watchdog() {
	local up _
	read -r up _ </proc/uptime
	sleep "$(($1 > ${up%.*} ? $1 - ${up%.*} : 1))"
	fail "suite" "still running at ${1}s of uptime: stopped (the goroutines are in results/berth.log)"
	systemctl kill --kill-whom=main -s USR1 berth 2>/dev/null
	sleep 2
	save_results
	systemctl poweroff --no-block
}

# check NAME WANT GOT: equal strings pass.
check() {
	if [ "$2" = "$3" ]; then pass "$1 ($3)"; else fail "$1" "want '$2', got '$3'"; fi
}

# wait_for SECONDS COMMAND...: polls the command until it succeeds.
wait_for() {
	local deadline=$(($(date +%s) + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		sleep 1
	done
}

pod_json() { berth get pods "$1" -o json 2>/dev/null; }
pod_running() { [ "$(pod_json "$1" | jq -r '.status.containerStatuses[0].state.running != null')" = true ]; }
pod_terminated() { [ "$(pod_json "$1" | jq -r '.status.containerStatuses[0].state.terminated != null')" = true ]; }
pod_gone() { ! berth get pods "$1" >/dev/null 2>&1; }
container_id() { pod_json "$1" | jq -r '.status.containerStatuses[0].containerID'; }
host_pid() { pgrep -x -f "sleep $1" | head -n1; }

run_pod() {
	berth apply -f "$pods/$1.yaml" || return 1
	wait_for 180 pod_running "$1"
}

delete_pods() {
	berth delete pods "$@" --grace-period=1 >/dev/null 2>&1 || true
	for p in "$@"; do wait_for 120 pod_gone "$p" || fail "delete $p" "still listed after 120s"; done
}

# host: what kind of machine this is.
host_checks() {
	check "systemd is PID 1" systemd "$(cat /proc/1/comm)"
	check "/sys/fs/cgroup is cgroup2" cgroup2fs "$(stat -f -c %T /sys/fs/cgroup)"
	log "kernel $(uname -r), runc $(runc --version | head -n1), controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
}

# install: the binaries as make install puts them (PREFIX=/usr/local), the
# unit by the repository's own `make install-unit`, the test image as make
# image imports it.
install_berth() {
	install -m 0755 "$share/bin/berth" "$share/bin/berth-monitor" "$share/bin/berth-pause" "$share/bin/berth-runc" /usr/local/bin/
	local out
	out=$(make -s -C "$share/repo" install-unit BIN=/tmp/berth-unit 2>&1)
	log "make install-unit: $out"
	check "make install-unit enables the unit under systemd" enabled "$(systemctl is-enabled berth 2>&1)"
	berth image import --root /var/lib/berth "$share/busybox-oci.tar" >/dev/null
}

# unit: berth started, reloaded, restarted and stopped by systemd.
unit_checks() {
	local t=$(date +%s)
	if systemctl start berth; then
		check "systemctl start berth: active (Type=notify)" active "$(systemctl is-active berth)"
	else
		fail "systemctl start berth" "$(systemctl status berth --no-pager 2>&1 | tail -n 20)"
		return 1
	fi
	log "berth started in $(($(date +%s) - t))s"
	if journalctl -b -u berth --no-pager | grep -q 'msg="berth ready"'; then
		pass "the journal carries berth's log (berth ready)"
	else
		fail "the journal carries berth's log" "no 'berth ready' in journalctl -u berth"
	fi
	systemd-analyze security berth --no-pager >"$res/security.txt" 2>&1
	log "systemd-analyze security berth: $(tail -n 1 "$res/security.txt")"
	check "crictl info: berth runs the pinned runc" "/usr/local/bin/berth-runc" \
		"$(crictl info 2>/dev/null | jq -r '.runtime | if type == "string" then fromjson else . end | .ociRuntimePath')"
	log "berth version: $(berth version 2>&1 | tr '\n' ' ')"
	systemctl reload berth
	check "systemctl reload berth: still active" active "$(systemctl is-active berth)"
	if ! run_pod keep; then
		fail "pod keep runs" "$(berth describe pod keep 2>&1 | tail -n 20)"
		return 1
	fi
	pass "pod keep runs under the unit"
	local id pid
	id=$(container_id keep) pid=$(host_pid 86402)
	systemctl restart berth
	check "systemctl restart berth: active" active "$(systemctl is-active berth)"
	wait_for 60 pod_running keep
	check "restart keeps the container (id)" "$id" "$(container_id keep)"
	check "restart keeps the container (pid)" "$pid" "$(host_pid 86402)"
	systemctl stop berth
	check "systemctl stop berth: inactive" inactive "$(systemctl is-active berth)"
	check "stop leaves the pod running (pid)" "$pid" "$(host_pid 86402)"
	systemctl start berth
	check "systemctl start berth again: active" active "$(systemctl is-active berth)"
	wait_for 60 pod_running keep
	check "start after stop: same container" "$id" "$(container_id keep)"
	delete_pods keep
}

# stats_checks DRIVER ID DIR: the CRI's ContainerStats against the files of
# the container's cgroup DIR, read right after: memory within 1 MiB of
# memory.current, CPU time and PSI totals not past what the files say then,
# PSI present exactly where the kernel offers it.
stats_checks() {
	local d=$1 id=$2 dir=$3 st
	st=$(crictl stats -o json --id "$id" | jq -c '.stats[0]')
	local mem cur
	mem=$(jq -r '.memory.usageBytes.value' <<<"$st") cur=$(cat "$dir/memory.current")
	if [ "$mem" -gt 0 ] && [ $((mem > cur ? mem - cur : cur - mem)) -le 1048576 ]; then
		pass "$d: ContainerStats memory usage $mem ~ memory.current $cur"
	else
		fail "$d: ContainerStats memory usage" "$mem, memory.current $cur"
	fi
	local cpu usec
	cpu=$(jq -r '.cpu.usageCoreNanoSeconds.value' <<<"$st") usec=$(awk '$1 == "usage_usec" {print $2}' "$dir/cpu.stat")
	if [ "$cpu" -gt 0 ] && [ "$cpu" -le $((usec * 1000)) ]; then
		pass "$d: ContainerStats CPU $cpu ns <= cpu.stat usage_usec $usec"
	else
		fail "$d: ContainerStats CPU" "$cpu ns, cpu.stat usage_usec $usec"
	fi
	local r want got
	for r in cpu memory io; do
		want=absent got=absent
		cat "$dir/$r.pressure" >/dev/null 2>&1 && want=present
		[ "$(jq -r ".$r.psi.Some.Total // .$r.psi.some.total // empty" <<<"$st")" != "" ] && got=present
		check "$d: ContainerStats $r PSI where $r.pressure is" "$want" "$got"
	done
	log "$d: ContainerStats: $st"
}

# cgroup_checks DRIVER: limits visible in a private cgroup namespace, and
# an OOM kill reported as such.
cgroup_checks() {
	local d=$1 pod_cgroup=
	if ! run_pod limits; then
		fail "$d: pod limits runs" "$(berth describe pod limits 2>&1 | tail -n 20)"
	else
		check "$d: /sys/fs/cgroup/memory.max in the container" 67108864 "$(berth exec limits -- cat /sys/fs/cgroup/memory.max 2>&1)"
		check "$d: /sys/fs/cgroup/cpu.max in the container" "50000 100000" "$(berth exec limits -- cat /sys/fs/cgroup/cpu.max 2>&1)"
		check "$d: /proc/self/cgroup in the container (private cgroup namespace)" "0::/" "$(berth exec limits -- cat /proc/self/cgroup 2>&1)"
		local pid cid
		pid=$(host_pid 86401)
		log "$d: the container's cgroup on the host: $(cat /proc/"$pid"/cgroup 2>&1)"
		cid=$(container_id limits)
		local dir
		dir=/sys/fs/cgroup$(cut -d: -f3 /proc/"$pid"/cgroup)
		stats_checks "$d" "${cid#*://}" "$dir"
		# The pod-level cgroup, as kubelet makes it on v2: a Guaranteed
		# pod's limits on the pod, below kubepods.
		pod_cgroup=$(dirname "$dir")
		check "$d: the pod's cgroup ($pod_cgroup) has the pod's memory.max" 67108864 "$(cat "$pod_cgroup/memory.max" 2>&1)"
		check "$d: the pod's cgroup has the pod's cpu.max" "50000 100000" "$(cat "$pod_cgroup/cpu.max" 2>&1)"
		check "$d: the pod's cgroup has kubelet's cpu.weight for 500m" 20 "$(cat "$pod_cgroup/cpu.weight" 2>&1)"
		if [ -f "$pod_cgroup/hugetlb.2MB.max" ]; then
			check "$d: the pod's cgroup allows no huge pages it did not request" 0 "$(cat "$pod_cgroup/hugetlb.2MB.max")"
		else
			log "$d: no hugetlb controller in the pod's cgroup ($(cat "$pod_cgroup/cgroup.controllers"))"
		fi
		local top
		top=$(berth top pods 2>&1)
		if grep -q '^limits ' <<<"$top" || grep -q ' limits ' <<<"$top"; then pass "$d: berth top pods lists the pod"; else fail "$d: berth top pods" "$top"; fi
		log "$d: berth top pods: $top"
		crictl update --memory 100663296 "${cid#*://}" >/dev/null
		check "$d: memory.max in the container after crictl update --memory 96Mi" 100663296 "$(berth exec limits -- cat /sys/fs/cgroup/memory.max 2>&1)"
	fi
	berth apply -f "$pods/oom.yaml" >/dev/null
	local p term
	for p in oom-a oom-b; do
		if wait_for 180 pod_terminated $p; then
			term=$(pod_json $p | jq -c '.status.containerStatuses[0].state.terminated | {reason, exitCode}')
			check "$d: a container past its 32Mi limit ends OOMKilled, 137 ($p)" '{"reason":"OOMKilled","exitCode":137}' "$term"
		else
			fail "$d: pod $p terminates" "$(berth describe pod $p 2>&1 | tail -n 20)"
		fi
	done
	# Where each kill was counted: the container's memory.events.
	find /var/lib/berth /run/berth -name monitor.log -exec grep -h "OOM-killed" {} + 2>/dev/null |
		while read -r line; do log "$d: monitor: $line"; done
	delete_pods limits oom-a oom-b
	if [ -n "${pod_cgroup:-}" ]; then
		wait_for 60 test ! -d "$pod_cgroup"
		check "$d: the pod's cgroup is removed with the pod" absent "$([ -d "$pod_cgroup" ] && echo present || echo absent)"
	fi
}

# critest_checks: the focused critest run (make test-vm's VM_CRITEST_FOCUS:
# the resource, OOM, stats, security-context, user namespace and image
# volume specs) of test/critest's
# compiled test, against a berth serve of its own with its own registry,
# as make critest runs it on the host.
critest_checks() {
	local dir=$share/critest rc t
	t=$(date +%s)
	(cd "$dir" && BERTH_CRITEST=$dir/critest BERTH_CRITEST_BUSYBOX=$dir/busybox BERTH_CRITEST_PROGRAMS=$dir \
		BERTH_CRITEST_FOCUS="$(cat focus)" timeout 900 ./critest.test -test.run '^TestCritest$' -test.v -test.timeout 14m) \
		>"$res/critest.log" 2>&1
	rc=$?
	local ran
	ran=$(grep -o 'Ran [0-9]* of [0-9]* Specs' "$res/critest.log" | tail -n1)
	log "critest: ${ran:-no summary} in $(($(date +%s) - t))s (results/critest.log)"
	if [ "$rc" = 0 ] && [ -n "$ran" ] && ! grep -q '^Ran 0 of' <<<"$ran"; then
		pass "critest, focused: $ran"
	else
		fail "critest, focused" "exit $rc, ${ran:-no summary}: $(grep -E '^\s*\[FAIL\]|--- FAIL' "$res/critest.log" | head -n 10)"
		# The share goes with the VM: the failures' own lines come back in the log.
		log "critest failures: $(grep -E -A8 '^\s*\[FAILED\]|rpc error' "$res/critest.log" | head -n 60)"
	fi
}

set_driver() {
	mkdir -p /etc/berth
	echo "cgroup_driver = \"$1\"" >/etc/berth/config.toml
	systemctl restart berth
	wait_for 60 systemctl is-active --quiet berth
	check "berth active with cgroup_driver = $1" active "$(systemctl is-active berth)"
}

source "$share/kubelet.sh"
source "$share/agent.sh"
watchdog "$(cat "$share/suite-deadline")" &
watchdog_pid=$!
host_checks
install_berth || fail install "installing berth failed"
if unit_checks; then
	log "cgroupfs driver (the default)"
	cgroup_checks cgroupfs
	qos_checks cgroupfs
	log "systemd driver"
	set_driver systemd
	cgroup_checks systemd
	qos_checks systemd
	log "eviction's memory signal"
	eviction_checks
	log "an upstream kubelet, cgroupDriver systemd"
	kubelet_checks
fi
log "critest, focused"
critest_checks
log "suite done in $(($(date +%s) - t0))s"
kill "$watchdog_pid" 2>/dev/null
save_results

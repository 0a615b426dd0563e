# Sourced by inside.sh: the agent's scenarios that touch cgroups beyond the
# Guaranteed pod of cgroup_checks — the Burstable and BestEffort classes,
# the pod-level CRI stats, and eviction's memory signal, which on cgroup v2
# comes from /proc/meminfo (the root has no memory.current). Uses
# inside.sh's log/check/pass/fail/wait_for and kubelet.sh's crictl.

# pod_cgroup_of PID: the directory of the pod-level cgroup above the
# container's cgroup of host process PID.
pod_cgroup_of() { dirname "/sys/fs/cgroup$(cut -d: -f3 /proc/"$1"/cgroup)"; }

# near A B SLACK: A within SLACK of B.
near() { [ $(($1 > $2 ? $1 - $2 : $2 - $1)) -le "$3" ]; }

# qos_checks DRIVER: a Burstable and a BestEffort pod, each in its class's
# cgroup, sized as kubelet sizes them (cpu.weight of the requests by
# kubelet's linear conversion; a memory limit only where every container
# has one), and both cgroups gone with the pods.
qos_checks() {
	local d=$1 dirs=()
	berth apply -f "$pods/qos.yaml" >/dev/null
	local name sleep class weight mem dir pid
	for spec in "qos-burstable 86403 burstable 4 67108864" "qos-besteffort 86404 besteffort 1 max"; do
		read -r name sleep class weight mem <<<"$spec"
		if ! wait_for 180 pod_running "$name"; then
			fail "$d: pod $name runs" "$(berth describe pod "$name" 2>&1 | tail -n 20)"
			continue
		fi
		pid=$(host_pid "$sleep")
		dir=$(pod_cgroup_of "$pid")
		dirs+=("$dir")
		case $dir in
		*"$class"*pod*) pass "$d: the $class pod's cgroup is under its class ($dir)" ;;
		*) fail "$d: the $class pod's cgroup is under its class" "$dir" ;;
		esac
		check "$d: the $class pod's cgroup has kubelet's cpu.weight" "$weight" "$(cat "$dir/cpu.weight" 2>&1)"
		check "$d: the $class pod's cgroup memory.max" "$mem" "$(cat "$dir/memory.max" 2>&1)"
		check "$d: the $class pod's cgroup cpu.max (no CPU limit)" "max 100000" "$(cat "$dir/cpu.max" 2>&1)"
		sandbox_stats_checks "$d" "$name" "$dir"
	done
	delete_pods qos-burstable qos-besteffort
	for dir in "${dirs[@]}"; do
		wait_for 60 test ! -d "$dir"
		check "$d: $(basename "$dir") is removed with its pod" absent "$([ -d "$dir" ] && echo present || echo absent)"
	done
}

# sandbox_stats_checks DRIVER POD DIR: PodSandboxStats and
# ListPodSandboxMetrics against the files of the pod's cgroup DIR, read
# right after (the pod holds one container, so its cgroup is the pod's).
sandbox_stats_checks() {
	local d=$1 name=$2 dir=$3 sid cid st mem cur
	sid=$(crictl pods --name "^$name\$" -q 2>/dev/null | head -n1)
	cid=$(crictl ps --pod "$sid" -q 2>/dev/null | head -n1)
	st=$(crictl statsp -o json --id "$sid" 2>&1)
	mem=$(jq -r '.stats[0].linux.memory.usageBytes.value // 0' <<<"$st" 2>/dev/null) cur=$(cat "$dir/memory.current")
	if [ "${mem:-0}" -gt 0 ] && near "$mem" "$cur" 1048576; then
		pass "$d: PodSandboxStats memory $mem ~ the pod cgroup's memory.current $cur"
	else
		fail "$d: PodSandboxStats memory" "'$mem', memory.current $cur: $st"
	fi
	local m
	m=$(crictl metricsp -o json 2>&1 | jq -r --arg c "$cid" \
		'[.. | objects | select(.containerId? == $c) | .metrics[]? | select(.name == "container_memory_usage_bytes") | .value.value // .value] | first // 0' 2>/dev/null)
	cur=$(cat "$dir/memory.current")
	if [ "${m:-0}" -gt 0 ] && near "$m" "$cur" 1048576; then
		pass "$d: ListPodSandboxMetrics container_memory_usage_bytes $m ~ memory.current $cur"
	else
		fail "$d: ListPodSandboxMetrics container_memory_usage_bytes" "'$m', memory.current $cur"
	fi
}

# eviction_checks: the agent's memory.available on a v2 host. A drop-in
# (as an admin writes one) sets a hard threshold above the VM's memory, so
# the node is under memory pressure at once: the agent evicts the
# BestEffort pod with kubelet's message, whose available figure must be
# MemFree plus Inactive(file) of /proc/meminfo as read then.
eviction_checks() {
	local dropin=/etc/systemd/system/berth.service.d/eviction.conf
	if ! run_pod evict; then
		fail "eviction: a BestEffort pod runs" "$(berth describe pod evict 2>&1 | tail -n 20)"
		return
	fi
	mkdir -p "$(dirname "$dropin")"
	printf '[Service]\nExecStart=\nExecStart=/usr/local/bin/berth serve --eviction-hard=memory.available<100Gi\n' >"$dropin"
	systemctl daemon-reload && systemctl restart berth
	wait_for 60 systemctl is-active --quiet berth
	local status=
	evicted() { status=$(pod_json evict | jq -c '.status | {phase, reason, message}'); [ "$(jq -r .reason <<<"$status")" = Evicted ]; }
	if wait_for 120 evicted; then
		pass "eviction: the BestEffort pod is evicted under memory pressure ($status)"
		local avail want
		avail=$(jq -r .message <<<"$status" | sed -n 's/.*available: \([0-9]*\)Ki.*/\1/p')
		want=$(awk '$1 == "MemFree:" || $1 == "Inactive(file):" {s += $2} END {print s}' /proc/meminfo)
		if [ -n "$avail" ] && near "$avail" "$want" $((want / 4)); then
			pass "eviction: memory.available ${avail}Ki ~ MemFree + Inactive(file) ${want}Ki"
		else
			fail "eviction: memory.available" "'$avail'Ki in the message, MemFree + Inactive(file) ${want}Ki"
		fi
	else
		fail "eviction: the BestEffort pod is evicted" "$status"
	fi
	rm -f "$dropin"
	systemctl daemon-reload && systemctl restart berth
	wait_for 60 systemctl is-active --quiet berth
	delete_pods evict
}

# Sourced by inside.sh: an upstream kubelet (bin/kubelet in the share) run
# standalone on berth serve, as kubeadm sets a node up: cgroupDriver systemd
# and every cgroup v2 default of kubelet's (failCgroupV1, failSwapOn and
# cgroupsPerQOS untouched); MemoryQoS, on by default since 1.37, acts only
# with a memoryThrottlingFactor (kubelet's default is none), so the config
# sets 0.9. Uses inside.sh's log/check/pass/fail/wait_for.

kl_manifests=/etc/kubernetes/manifests
crictl() { timeout 60 "$share/bin/crictl" --config "$share/crictl.yaml" "$@"; }

# kl_container NAME: the id of kubelet's running container NAME.
kl_container() { crictl ps --name "^$1\$" --state running -q 2>/dev/null | head -n1; }
kl_running() { [ -n "$(kl_container "$1")" ]; }
# kl_attempts NAME: the highest restart attempt of container NAME.
kl_attempts() { crictl ps -a --name "^$1\$" -o json 2>/dev/null | jq '[.containers[].metadata.attempt // 0] | max // -1'; }
kl_restarted() { [ "$(kl_attempts "$1")" -ge 2 ]; }
kl_no_pods() { [ -z "$(crictl pods -q 2>/dev/null)" ]; }
kl_pod_slices() { find /sys/fs/cgroup/kubepods.slice -name '*-pod*.slice' 2>/dev/null; }
berth_scopes() { find /sys/fs/cgroup -name 'berth-*.scope' 2>/dev/null; }
kl_clean() { [ -z "$(kl_pod_slices)$(berth_scopes)" ]; }

kubelet_start() {
	mkdir -p "$kl_manifests"
	cat >/etc/kubernetes/kubelet.yaml <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix:///run/berth/berth.sock
staticPodPath: $kl_manifests
fileCheckFrequency: 1s
cgroupDriver: systemd
memoryThrottlingFactor: 0.9
enableServer: false
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
YAML
	install -m 0755 "$share/bin/kubelet" /usr/local/bin/kubelet
	systemd-run --unit=kubelet --collect /usr/local/bin/kubelet \
		--config /etc/kubernetes/kubelet.yaml --hostname-override vm --v 2
}

kubelet_checks() {
	local t cid
	t=$(date +%s)
	log "kubelet: $("$share/bin/kubelet" --version 2>&1)"
	if ! kubelet_start; then
		fail "kubelet starts" "systemd-run failed"
		return 1
	fi
	cp "$pods/kubelet-limits.yaml" "$pods/kubelet-burst.yaml" "$pods/kubelet-crash.yaml" "$kl_manifests/"
	if ! wait_for 300 kl_running app; then
		fail "kubelet: static pod kl-limits runs" "$(journalctl -u kubelet --no-pager | tail -n 30)"
		return 1
	fi
	log "kubelet: kl-limits running $(($(date +%s) - t))s after kubelet's start"
	cid=$(kl_container app)
	check "kubelet: /sys/fs/cgroup/memory.max in the container" 67108864 "$(crictl exec "$cid" cat /sys/fs/cgroup/memory.max 2>&1)"
	check "kubelet: /sys/fs/cgroup/cpu.max in the container" "50000 100000" "$(crictl exec "$cid" cat /sys/fs/cgroup/cpu.max 2>&1)"
	check "kubelet: /proc/self/cgroup in the container" "0::/" "$(crictl exec "$cid" cat /proc/self/cgroup 2>&1)"
	# kubelet's NoSwap (its default) is the unified entry memory.swap.max=0;
	# its hugepage limits are 0 for each page size the node has.
	check "kubelet: memory.swap.max in the container (NoSwap)" 0 "$(crictl exec "$cid" cat /sys/fs/cgroup/memory.swap.max 2>&1)"
	check "kubelet: hugetlb.2MB.max in the container" 0 "$(crictl exec "$cid" cat /sys/fs/cgroup/hugetlb.2MB.max 2>&1)"
	local host
	host=$(cat /proc/"$(pgrep -x -f 'sleep 86403' | head -n1)"/cgroup 2>&1)
	case $host in
	0::/kubepods.slice/kubepods-pod*.slice/berth-*.scope) pass "kubelet: the container's cgroup is kubelet's Guaranteed pod slice ($host)" ;;
	*) fail "kubelet: the container's cgroup" "want 0::/kubepods.slice/kubepods-pod<uid>.slice/berth-<id>.scope, got '$host'" ;;
	esac
	# MemoryQoS: request + 0.9 × (limit − request), rounded down to a page.
	if wait_for 120 kl_running burst; then
		cid=$(kl_container burst)
		check "kubelet: memory.high of a Burstable container (MemoryQoS)" 63750144 "$(crictl exec "$cid" cat /sys/fs/cgroup/memory.high 2>&1)"
	else
		fail "kubelet: static pod kl-burst runs" "$(crictl ps -a 2>&1)"
	fi
	if wait_for 240 kl_restarted crash; then
		pass "kubelet: a failing container is restarted (attempt $(kl_attempts crash))"
	else
		fail "kubelet: a failing container is restarted" "attempt $(kl_attempts crash)"
	fi
	if journalctl -u kubelet --no-pager | grep -q 'CrashLoopBackOff'; then
		pass "kubelet: it backs off (CrashLoopBackOff)"
	else
		fail "kubelet: it backs off" "no CrashLoopBackOff in kubelet's log"
	fi
	rm -f "$kl_manifests"/*.yaml
	if wait_for 240 kl_no_pods; then
		pass "kubelet: static pods removed with their manifests"
	else
		fail "kubelet: static pods removed" "$(crictl pods 2>&1)"
	fi
	wait_for 60 kl_clean
	check "kubelet: no pod slice or berth scope left" "" "$(kl_pod_slices)$(berth_scopes)"
	systemctl stop kubelet
	log "kubelet checks took $(($(date +%s) - t))s"
}

#!/bin/bash
# make test-vm (docs/vm.md): boots the Debian 12 image of image.sh under
# qemu (TCG: KVM hangs on the CI machines), systemd as PID 1, cgroup v2
# only, with a 9p share holding the freshly built binaries, the test image
# archive, the repository's berth.service and inside.sh; a one-shot unit in
# the image runs inside.sh and powers off. Results (log, a PASS/FAIL line
# per check, the journal's tail) come back through the share. A VM that
# does not start the suite within VM_BOOT_TIMEOUT, or a suite that runs past
# VM_TIMEOUT, is killed by pid and the console's tail printed.
#
# Usage: test/vm/run.sh   (root; after make build and the image archive)
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=$repo/bin
boot_timeout=${VM_BOOT_TIMEOUT:-300} # seconds until inside.sh starts
timeout=${VM_TIMEOUT:-1200}          # seconds for the whole VM
qemu=${QEMU:-qemu-system-x86_64}

kubelet=${KUBELET:-$bin/kube-1.37/kubelet}
for f in "$bin/berth" "$bin/berth-monitor" "$bin/berth-pause" "$bin/berth-runc" "$bin/busybox-oci.tar" "$bin/crictl" "$kubelet" "$bin/vm-critest/critest.test"; do
	[ -f "$f" ] || { echo "test-vm: $f missing: make test-vm builds it (build, crictl, kubelet-bin, the image archive and bin/vm-critest)" >&2; exit 1; }
done
command -v "$qemu" >/dev/null || { echo "test-vm: $qemu missing: apt-get install qemu-system-x86" >&2; exit 1; }

# Seconds from the kernel's boot-time clock: the wall clock of these
# machines has been seen to step by many minutes during a run.
now() {
	local up _
	read -r up _ </proc/uptime
	echo "${up%.*}"
}
t_start=$(now)
image=$("$repo/test/vm/image.sh" "$bin/vm")
t_image=$(now)
echo "test-vm: image $image ready in $((t_image - t_start))s"

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/berth-vm.XXXXXX")
qemu_pid=
cleanup() {
	if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then
		kill -KILL "$qemu_pid" 2>/dev/null || true
		wait "$qemu_pid" 2>/dev/null || true
	fi
	rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM # run cleanup (qemu, in the background, ignores SIGINT)

share=$tmp/share
mkdir -p "$share/bin" "$share/results"
cp "$bin/berth" "$bin/berth-monitor" "$bin/berth-pause" "$bin/berth-runc" "$bin/crictl" "$kubelet" "$share/bin/"
cp "$bin/busybox-oci.tar" "$repo/test/vm/inside.sh" "$repo/test/vm/kubelet.sh" "$repo/test/vm/agent.sh" "$share/"
# What make install-unit reads: the Makefile and the unit.
mkdir -p "$share/repo/contrib/systemd"
cp "$repo/Makefile" "$share/repo/"
cp "$repo/contrib/systemd/berth.service" "$share/repo/contrib/systemd/"
cp -r "$repo/test/vm/pods" "$share/"
# The focused critest run: the compiled test, critest, their programs.
cp -r "$bin/vm-critest" "$share/critest"
# The suite's own bound, in the guest's uptime (which starts with qemu):
# past it inside.sh saves the journals and powers off, so a hang inside
# still brings its goroutines back; VM_TIMEOUT stays the hard stop.
echo $((timeout - 120)) >"$share/suite-deadline"
printf 'runtime-endpoint: unix:///run/berth/berth.sock\ntimeout: 50\n' >"$share/crictl.yaml"
console=$tmp/console.log

# snapshot=on: the guest's writes go to a temporary file, the cached disk
# stays as built. panic=-1 with -no-reboot: a kernel panic ends qemu.
"$qemu" -accel tcg,thread=multi -cpu max -smp 2 -m 4096 -nographic -no-reboot \
	-kernel "$image/vmlinuz" -initrd "$image/initrd.img" \
	-append "root=/dev/vda rw console=ttyS0 panic=-1 systemd.unified_cgroup_hierarchy=1 systemd.show_status=0" \
	-drive "file=$image/disk.ext4,format=raw,if=virtio,snapshot=on" \
	-virtfs "local,path=$share,mount_tag=berth,security_model=none,id=berth" \
	-nic none </dev/null >"$console" 2>&1 &
qemu_pid=$!

fail() {
	echo "test-vm: $*" >&2
	echo "--- console (last 60 lines) ---" >&2
	tail -n 60 "$console" | tr -d '\r' >&2 || true
	if [ -s "$share/results/journal.txt" ]; then
		echo "--- VM journal (last 200 lines) ---" >&2
		cat "$share/results/journal.txt" >&2
	fi
	exit 1
}

# Wait for the suite to start (boot), then for qemu to exit (suite).
t_boot=
while kill -0 "$qemu_pid" 2>/dev/null; do
	elapsed=$(($(now) - t_image))
	if [ -z "$t_boot" ] && [ -f "$share/results/started" ]; then
		t_boot=$(now)
		echo "test-vm: booted to the suite in $((t_boot - t_image))s"
	fi
	if [ -z "$t_boot" ] && [ "$elapsed" -ge "$boot_timeout" ]; then
		fail "the VM did not start the suite within ${boot_timeout}s (VM_BOOT_TIMEOUT): killed"
	fi
	if [ "$elapsed" -ge "$timeout" ]; then
		[ -f "$share/results/log" ] && { echo "--- suite log (last 40 lines) ---"; tail -n 40 "$share/results/log"; } >&2
		fail "the VM ran past ${timeout}s (VM_TIMEOUT): killed"
	fi
	sleep 1
done
wait "$qemu_pid" || true
qemu_pid=
t_end=$(now)
[ -n "$t_boot" ] || fail "the VM stopped before the suite started"

echo "--- suite log ---"
cat "$share/results/log" 2>/dev/null || true
echo "--- systemd-analyze security berth (docs/vm.md, \"The unit's sandboxing\") ---"
cat "$share/results/security.txt" 2>/dev/null || true
echo "--- checks ---"
cat "$share/results/checks" 2>/dev/null || true
echo "test-vm: image $((t_image - t_start))s, boot $((t_boot - t_image))s, suite and power-off $((t_end - t_boot))s, total $((t_end - t_start))s"
status=$(cat "$share/results/status" 2>/dev/null || echo none)
case $status in
pass) echo "test-vm: PASS" ;;
fail) fail "FAIL: $(grep -c '^FAIL' "$share/results/checks" || true) check(s) failed" ;;
*) fail "the suite ended without a result (status: $status)" ;;
esac

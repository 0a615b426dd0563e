#!/bin/bash
# Builds the Debian 12 VM image of `make test-vm` (docs/vm.md) once per
# machine: a root file system from Debian's packages (mmdebstrap, with the
# host's own apt sources read as they are, never changed), an ext4 disk made
# from it (mkfs.ext4 -d), and the kernel and initrd taken out of it. The
# image lives in $VM_CACHE/<hash of this recipe>/ and is rebuilt when this
# file changes; older images are removed. Prints the image directory.
#
# Usage: test/vm/image.sh CACHE_DIR   (root)
set -euo pipefail

cache=${1:?usage: image.sh CACHE_DIR}
recipe=$(readlink -f "$0")
hash=$(sha256sum "$recipe" | cut -c1-16)
dir=$cache/debian12-$hash

# What the image holds: systemd as PID 1, the kernel, berth's runtime
# packages (the Makefile's RUNTIME_PACKAGES) and what the checks inside use
# (make: the repository's install-unit target runs as is; docker-registry:
# the focused critest run's registry, started by the test, not at boot).
packages=(
	linux-image-amd64 systemd-sysv udev dbus kmod
	runc containernetworking-plugins busybox-static iptables nftables iproute2 util-linux
	procps e2fsprogs jq make docker-registry
)

if [ -f "$dir/done" ]; then
	echo "$dir"
	exit 0
fi
# One build at a time per cache; another may have finished it meanwhile.
mkdir -p "$cache"
exec 9>"$cache/lock"
flock 9
if [ -f "$dir/done" ]; then
	echo "$dir"
	exit 0
fi
# Only the image directory goes to stdout; what the tools print, to stderr.
exec 3>&1 1>&2

for tool in mmdebstrap mkfs.ext4; do
	command -v "$tool" >/dev/null || { echo "image.sh: $tool missing: apt-get install mmdebstrap e2fsprogs" >&2; exit 1; }
done

# The host's apt sources, read only: mmdebstrap copies them into the image.
sources=()
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
	[ -s "$f" ] && sources+=("$f")
done
[ ${#sources[@]} -gt 0 ] || { echo "image.sh: no apt sources in /etc/apt" >&2; exit 1; }

# The root file system is built outside the repository (go ./... would walk
# into it); only the finished disk, kernel and initrd go into the cache.
mkdir -p "$cache"
work=$(mktemp -d "${TMPDIR:-/var/tmp}/berth-vm-image.XXXXXX")
trap 'rm -rf --one-file-system "$work"' EXIT
root=$work/root

# The unit that runs the suite: it mounts the 9p share the host passes
# (tag "berth"), runs its inside.sh and powers the VM off, pass or fail.
unit='[Unit]
Description=berth VM test suite (make test-vm)
After=multi-user.target
SuccessAction=poweroff-force
FailureAction=poweroff-force

[Service]
Type=oneshot
ExecStartPre=/bin/mkdir -p /mnt/share
ExecStartPre=/bin/mount -t 9p -o trans=virtio,version=9p2000.L,msize=1048576 berth /mnt/share
ExecStart=/bin/bash /mnt/share/inside.sh /mnt/share
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
'

# Check-Valid-Until: hosts whose sources point at a dated snapshot.
mmdebstrap --variant=minbase --include="$(IFS=,; echo "${packages[*]}")" \
	--aptopt='Acquire::Check-Valid-Until "false"' \
	--customize-hook='echo berth-vm > "$1/etc/hostname"' \
	--customize-hook='echo "/dev/vda / ext4 defaults 0 1" > "$1/etc/fstab"' \
	--customize-hook='passwd --root "$1" -d root' \
	--customize-hook="printf '%s' '$unit' > \"\$1/etc/systemd/system/berth-vm-test.service\"" \
	--customize-hook='chroot "$1" systemctl enable berth-vm-test.service' \
	--customize-hook='chroot "$1" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer systemd-timesyncd.service getty@tty1.service serial-getty@ttyS0.service docker-registry.service' \
	--customize-hook='cp "$1"/boot/vmlinuz-* "$1/../vmlinuz" && cp "$1"/boot/initrd.img-* "$1/../initrd.img"' \
	bookworm "$root" "${sources[@]}"

# The disk: the root file system plus room for images and containers.
mkfs.ext4 -q -L berth-vm -d "$root" "$work/disk.ext4" 3G
rm -rf --one-file-system "$root"
rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
cp --sparse=always "$work/disk.ext4" "$dir.tmp/"
mv "$work/vmlinuz" "$work/initrd.img" "$dir.tmp/"
find "$cache" -maxdepth 1 -name 'debian12-*' ! -name "debian12-$hash*" -exec rm -rf --one-file-system {} +
rm -rf "$dir" && mv "$dir.tmp" "$dir" && touch "$dir/done"
echo "$dir" >&3

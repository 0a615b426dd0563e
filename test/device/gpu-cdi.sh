#!/bin/bash
# A real GPU through CDI, on a lent machine with an NVIDIA GPU (the device
# tool; nothing depends on it): berth serve from carried binaries
# (berth, berth-monitor, berth-pause, berth-runc, busybox-oci.tar, gzipped
# in CARRY), a CDI spec written here from what the host has (the GPU's
# device nodes, nvidia-smi and the libraries it loads, mounted read-only),
# and three pods through the agent: one asking for nvidia.com/gpu=all by a
# cdi.k8s.io/ annotation must run nvidia-smi; one without must not see the
# GPU; one asking for an unknown device must fail with berth's message.
# Usage: test/device/gpu-cdi.sh CARRY OUT
set -u
carry=${1:?carry dir} out=${2:?out dir}
exec > >(tee "$out/gpu-cdi.log") 2>&1
echo "== host"
uname -r; head -n2 /etc/os-release; id -u
echo "cgroup: $(stat -fc %T /sys/fs/cgroup), pid 1: $(cat /proc/1/comm)"
grep CapEff /proc/self/status
nvidia-smi -L || { echo "no nvidia-smi: stop"; exit 1; }
ls -l /dev/nvidia* 2>&1
smi=$(command -v nvidia-smi)
ml=$(ldconfig -p | awk '/libnvidia-ml.so.1 .*x86-64/ {print $NF; exit}')
echo "nvidia-smi $smi, libnvidia-ml $ml"

bin=/opt/berth-dev/bin
mkdir -p "$bin"
for f in berth berth-monitor berth-pause berth-runc busybox-oci.tar; do gunzip -c "$carry/$f.gz" >"$bin/$f"; done
chmod 0755 "$bin"/berth*
"$bin/berth-runc" --version | head -n1

echo "== the CDI spec"
mkdir -p /etc/cdi && chmod 0755 /etc/cdi
{
	echo 'cdiVersion: "0.6.0"'
	echo 'kind: nvidia.com/gpu'
	echo 'devices:'
	echo '- name: all'
	echo '  containerEdits:'
	echo '    deviceNodes:'
	for n in /dev/nvidia[0-9]* /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools; do
		[ -c "$n" ] && echo "    - path: $n"
	done
	echo 'containerEdits:'
	echo "  env: [LD_LIBRARY_PATH=$(dirname "$ml")]"
	echo '  mounts:'
	echo "  - {hostPath: $smi, containerPath: /usr/bin/nvidia-smi, options: [ro, nosuid, nodev, bind]}"
	for f in "$ml" $(ldd "$smi" | awk '/=> \// {print $3} /^[ \t]*\/lib/ {print $1}') $(readlink -f "$ml"); do
		[ -e "$f" ] && echo "  - {hostPath: $(readlink -f "$f"), containerPath: $f, options: [ro, nosuid, nodev, bind]}"
	done | sort -u
} >/etc/cdi/berth-gpu.yaml
cat /etc/cdi/berth-gpu.yaml

echo "== berth serve"
cat >/tmp/berth-dev.toml <<TOML
root_dir = "/var/lib/berth-dev"
state_dir = "/run/berth-dev"
[cdi]
spec_dirs = ["/etc/cdi"]
TOML
b() { timeout 60 "$bin/berth" --config /tmp/berth-dev.toml "$@"; }
"$bin/berth" serve --config /tmp/berth-dev.toml >"$out/serve.log" 2>&1 &
serve=$!
for _ in $(seq 60); do [ -S /run/berth-dev/agent.sock ] && break; sleep 0.5; done
b image import "$bin/busybox-oci.tar"
cat >/tmp/gpu-pods.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: gpu
  annotations: {cdi.k8s.io/gpu: nvidia.com/gpu=all}
spec:
  hostNetwork: true
  restartPolicy: Never
  containers:
  - name: smi
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "ls /dev/nvidia*; nvidia-smi -L; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv"]
---
apiVersion: v1
kind: Pod
metadata:
  name: nogpu
spec:
  hostNetwork: true
  restartPolicy: Never
  containers:
  - name: smi
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "ls /dev/nvidia* 2>&1; echo no GPU here"]
---
apiVersion: v1
kind: Pod
metadata:
  name: unknown
  annotations: {cdi.k8s.io/gpu: nvidia.com/gpu=7}
spec:
  hostNetwork: true
  restartPolicy: Never
  containers:
  - name: smi
    image: busybox:latest
    imagePullPolicy: IfNotPresent
    command: ["true"]
YAML
b apply -f /tmp/gpu-pods.yaml
for _ in $(seq 60); do
	[ "$(b get pods gpu -o json 2>/dev/null | grep -c '"terminated"')" -ge 1 ] && [ "$(b get pods nogpu -o json 2>/dev/null | grep -c '"terminated"')" -ge 1 ] && break
	sleep 1
done
for p in gpu nogpu; do echo "== logs $p"; b logs "$p"; done
echo "== unknown"; b describe pod unknown | tail -n 15
b get pods -o wide
b delete -f /tmp/gpu-pods.yaml --grace-period=1 >/dev/null
for _ in $(seq 30); do [ -z "$(b get pods 2>/dev/null | tail -n +2)" ] && break; sleep 1; done
kill "$serve"; wait "$serve"
tail -n 30 "$out/serve.log"

// Package cdidevice gives containers the devices the Container Device
// Interface names (vendor.com/class=name): the CDI project's Go library
// (tags.cncf.io/container-device-interface) reads the spec files of the
// configured directories (/etc/cdi, /var/run/cdi by default), refreshes
// when they change, and applies a device's edits — device nodes with their
// cgroup rules, mounts, environment, hooks — to a container's OCI spec.
//
// A container asks for devices in two ways, both read here: the CRI's
// ContainerConfig.CDIDevices (DRA and device plugins since Kubernetes
// 1.31) and the annotations prefixed cdi.k8s.io/ (device plugins before
// that), as containerd and CRI-O read them. An unknown device or a name
// that is not fully qualified is InvalidArgument naming it, the field it
// came from and the directories searched.
package cdidevice

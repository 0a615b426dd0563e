package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/podcopy"
)

// cpOptions are the flags of `berth cp`.
type cpOptions struct {
	namespace  string
	container  string
	noPreserve bool
}

// fileSpec is one side of a copy: a local path, or a path in a pod.
type fileSpec struct {
	namespace, pod string // pod is "" for a local path
	path           string
}

func newCpCommand(opts *globalOptions) *cobra.Command {
	var o cpOptions
	cmd := &cobra.Command{
		Use:   "cp [-c CONTAINER] SRC DEST",
		Short: "Copy files to and from a pod's container, like kubectl cp (no tar needed in the image)",
		Long: `Copy a file, a directory (recursively) or a symlink (as a symlink) between the host
and a running container: berth cp [NS/]POD:PATH LOCAL, or berth cp LOCAL [NS/]POD:PATH.
Nothing runs in the container: berth (root, on the same host as the runtime) opens the
root of the container's process, /proc/<pid>/root, and resolves every path beneath it
(openat2 RESOLVE_IN_ROOT), so symlinks and ".." never lead out of the container; devices,
FIFOs and sockets are refused. A relative container path starts at the container's
workingDir (else /). Modes are kept (set-id bits do not come out to the host). Files
copied into the container keep the local owner's uid and gid, as kubectl cp's tar does;
--no-preserve makes them root's (uid and gid 0 in the container) with the umask 022
applied. Files copied out are the copying user's.`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completePodNames(opts, "", 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCp(cmd, opts, o, args[0], args[1])
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "default", "namespace of pods named without one")
	f.StringVarP(&o.container, "container", "c", "", "container name (default: the pod's first container)")
	f.BoolVar(&o.noPreserve, "no-preserve", false, "files copied into the container are root's, with the umask 022 applied")
	_ = cmd.RegisterFlagCompletionFunc("container", completeContainerNames(opts)) // the flag exists
	return cmd
}

// parseFileSpec reads kubectl cp's file spec: [NS/]POD:PATH, or a local
// path (without ':', or starting with '/' or '.').
func parseFileSpec(arg, namespace string) (fileSpec, error) {
	i := strings.Index(arg, ":")
	if i < 0 || strings.HasPrefix(arg, "/") || strings.HasPrefix(arg, ".") {
		return fileSpec{path: arg}, nil
	}
	spec := fileSpec{namespace: namespace, pod: arg[:i], path: arg[i+1:]}
	if ns, pod, found := strings.Cut(spec.pod, "/"); found {
		spec.namespace, spec.pod = ns, pod
	}
	if spec.namespace == "" || spec.pod == "" || strings.Contains(spec.pod, "/") {
		return fileSpec{}, fmt.Errorf("%q: want [NAMESPACE/]POD:PATH", arg)
	}
	if spec.path == "" {
		return fileSpec{}, fmt.Errorf("%q: the path in the container is empty", arg)
	}
	return spec, nil
}

// parseCpArgs parses both sides: exactly one must be in a pod.
func parseCpArgs(src, dst, namespace string) (fileSpec, fileSpec, error) {
	s, err := parseFileSpec(src, namespace)
	if err != nil {
		return fileSpec{}, fileSpec{}, err
	}
	d, err := parseFileSpec(dst, namespace)
	if err != nil {
		return fileSpec{}, fileSpec{}, err
	}
	switch {
	case s.pod != "" && d.pod != "":
		return fileSpec{}, fileSpec{}, errors.New("one of src or dest must be a local file specification")
	case s.pod == "" && d.pod == "":
		return fileSpec{}, fileSpec{}, errors.New("one of src or dest must be a remote file specification ([NAMESPACE/]POD:PATH)")
	}
	return s, d, nil
}

func runCp(cmd *cobra.Command, opts *globalOptions, o cpOptions, srcArg, dstArg string) error {
	src, dst, err := parseCpArgs(srcArg, dstArg, o.namespace)
	if err != nil {
		return err
	}
	remote := src
	if dst.pod != "" {
		remote = dst
	}
	container, err := openContainerRoot(cmd, opts, remote, o.container)
	if err != nil {
		return err
	}
	defer container.root.Close()
	host, err := podcopy.OpenRoot("/", "host")
	if err != nil {
		return err
	}
	defer host.Close()
	if src.pod != "" {
		local, err := filepath.Abs(dst.path)
		if err != nil {
			return err
		}
		err = podcopy.Copy(container.root, container.resolve(src.path), host, local, podcopy.Options{Owner: podcopy.OwnerCopier, Perm: 0o777})
		return copyError(err, "from", src)
	}
	local, err := filepath.Abs(src.path)
	if err != nil {
		return err
	}
	copyOpts := podcopy.Options{Owner: podcopy.OwnerPreserve}
	if o.noPreserve {
		copyOpts = podcopy.Options{Owner: podcopy.OwnerRoot, Perm: 0o7755}
	}
	return copyError(podcopy.Copy(host, local, container.root, container.resolve(dst.path), copyOpts), "to", dst)
}

func copyError(err error, dir string, spec fileSpec) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("cp %s pod %s/%s: %w", dir, spec.namespace, spec.pod, err)
}

// containerRoot is a running container's root, opened.
type containerRoot struct {
	root    *podcopy.Root
	workDir string
}

// resolve makes a path in the container absolute: relative ones start at
// the container's workingDir.
func (c containerRoot) resolve(p string) string {
	if path.IsAbs(p) {
		return p
	}
	return path.Join("/", c.workDir, p)
}

// openContainerRoot finds the container's process through CRI (the pid of
// its verbose status) and opens its root, checking that the pid still
// belongs to the running container once a pidfd holds it.
func openContainerRoot(cmd *cobra.Command, opts *globalOptions, spec fileSpec, name string) (containerRoot, error) {
	target, err := dialContainer(cmd, opts, spec.namespace, spec.pod, name)
	if err != nil {
		return containerRoot{}, err
	}
	defer target.cri.Close()
	what := fmt.Sprintf("container %s of pod %s/%s", target.container.Name, spec.namespace, spec.pod)
	rt := target.cri.RuntimeService()
	pid, err := containerPid(cmd.Context(), rt, target.id)
	if err != nil {
		return containerRoot{}, fmt.Errorf("%s: %w", what, err)
	}
	root, err := podcopy.OpenProcessRoot(pid, what, func() error {
		now, err := containerPid(cmd.Context(), rt, target.id)
		if err == nil && now != pid {
			err = fmt.Errorf("the container's process is now %d", now)
		}
		return err
	})
	if err != nil {
		return containerRoot{}, err
	}
	return containerRoot{root: root, workDir: target.container.WorkingDir}, nil
}

// containerPid is the pid of a running container's process, from the
// "pid" of CRI's verbose info (containerd and berth both report it).
func containerPid(ctx context.Context, rt runtimeapi.RuntimeServiceClient, id string) (int, error) {
	resp, err := rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		return 0, fmt.Errorf("CRI ContainerStatus: %w", err)
	}
	if st := resp.GetStatus().GetState(); st != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return 0, fmt.Errorf("not running (%s)", st)
	}
	return pidOfInfo(resp.GetInfo())
}

// pidOfInfo reads "pid" from the JSON of info["info"].
func pidOfInfo(info map[string]string) (int, error) {
	var parsed struct {
		Pid int `json:"pid"`
	}
	raw, ok := info["info"]
	if !ok {
		return 0, errors.New("the runtime's verbose ContainerStatus has no info: cannot find the container's process")
	}
	if err := json.Unmarshal([]byte(raw), &parsed); err != nil {
		return 0, fmt.Errorf("the runtime's verbose ContainerStatus info: %w", err)
	}
	if parsed.Pid <= 0 {
		return 0, errors.New("the runtime reports no pid for the container")
	}
	return parsed.Pid, nil
}

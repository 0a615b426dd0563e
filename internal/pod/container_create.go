package pod

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/cdidevice"
	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/internal/oci"
	"github.com/berth-dev/berth/internal/store"
)

// CreateContainer creates a container in a ready sandbox and returns its id:
//  1. validate; resolve the sandbox and the image; reserve the name;
//  2. write the intent record (state creating);
//  3. mount the rootfs (overlay over the image's layers) and the image
//     volumes (imagevolume.go);
//  4. build the OCI spec and write the bundle; 5. record created.
//
// runc does not run here: StartContainer creates and starts the container
// in one `runc run --detach` (container_start.go), one runc process and one
// monitor round trip fewer than `runc create` here and `runc start` there.
func (s *Service) CreateContainer(ctx context.Context, sandboxID string, cfg *runtimeapi.ContainerConfig, sandboxCfg *runtimeapi.PodSandboxConfig) (_ string, retErr error) {
	if err := validateContainerConfig(cfg, sandboxCfg); err != nil {
		return "", err
	}
	devices, err := s.cdiDevices(cfg)
	if err != nil {
		return "", fmt.Errorf("container %q: %w", cfg.GetMetadata().GetName(), err)
	}
	sbEntry, err := s.findSandbox(sandboxID)
	if err != nil {
		return "", err
	}
	// The sandbox must stay ready until the container is registered: a
	// concurrent stop or remove waits, or this create sees it gone. Creates
	// in one pod share the lock and run side by side.
	sbEntry.op.RLock()
	defer sbEntry.op.RUnlock()
	sb := sbEntry.snapshot()
	if !s.sandboxKnown(sbEntry) {
		return "", fmt.Errorf("pod sandbox %s: %w", sb.ID, errdefs.ErrNotFound)
	}
	if sb.State != SandboxReady {
		return "", fmt.Errorf("pod sandbox %s is %s, not ready: %w", sb.ID, sb.State, errdefs.ErrFailedPrecondition)
	}
	img, vols, release, err := s.resolveImages(cfg)
	if err != nil {
		return "", fmt.Errorf("container %q: %w", cfg.GetMetadata().GetName(), err)
	}
	defer release()
	rec := s.newContainerRecord(cfg, &sb, img)
	rec.ImageVolumes = recordImageVolumes(vols)
	var rb rollback
	defer func() {
		if retErr != nil {
			rb.run(ctx, s.log, "container "+rec.ID)
		}
	}()
	if err := s.containerNames.Reserve(rec.Name, rec.ID); err != nil {
		return "", fmt.Errorf("container %q: %w", rec.Name, err)
	}
	rb.add("release name", func(context.Context) error { s.containerNames.Release(rec.Name); return nil })
	if err := s.saveContainer(&rec); err != nil {
		return "", err
	}
	rb.add("remove record", func(context.Context) error { return os.RemoveAll(rec.Dir) })
	started := time.Now()
	if err := s.prepareBundle(&rec, &sb, img, vols, devices, &rb); err != nil {
		return "", createError(rec.ID, err)
	}
	rec.State = ContainerCreated
	if err := s.saveContainer(&rec); err != nil {
		return "", err
	}
	s.addContainer(rec)
	s.containerCreated(rec.ID)
	s.log.Debug("container created", "id", rec.ID, "name", rec.Name, "bundle", time.Since(started))
	return rec.ID, nil
}

// cdiDevices lists the CDI devices cfg asks for, each resolved now, before
// any side effect: a name no spec defines is InvalidArgument naming it.
func (s *Service) cdiDevices(cfg *runtimeapi.ContainerConfig) ([]cdidevice.Request, error) {
	reqs, err := cdidevice.Requested(cfg)
	if err != nil || len(reqs) == 0 {
		return nil, err
	}
	if s.cfg.Devices == nil {
		return nil, fmt.Errorf("%s: CDI device %q: berth has no CDI registry: %w", reqs[0].Field, reqs[0].Name, errdefs.ErrFailedPrecondition)
	}
	return reqs, s.cfg.Devices.Check(reqs)
}

// newContainerRecord fills the record of a container about to be created.
func (s *Service) newContainerRecord(cfg *runtimeapi.ContainerConfig, sb *Sandbox, img image.Image) Container {
	id := store.GenerateID()
	bundle := filepath.Join(s.bundlesDir(), id)
	rec := Container{
		ID:             id,
		Name:           containerName(cfg.GetMetadata(), sb.Config.GetMetadata()),
		SandboxID:      sb.ID,
		RuntimeHandler: sb.RuntimeHandler,
		State:          ContainerCreating,
		CreatedAt:      time.Now(),
		ImageID:        img.ID,
		ImageName:      cfg.GetImage().GetImage(),
		StopSignal:     img.Config.Config.StopSignal,
		Bundle:         bundle,
		Rootfs:         s.containerRootfs(sb, id, bundle),
		Dir:            filepath.Join(s.containersDir(), id),
		Config:         cfg,
	}
	if dir, lp := sb.Config.GetLogDirectory(), cfg.GetLogPath(); dir != "" && lp != "" {
		rec.LogPath = filepath.Join(dir, lp)
	}
	return rec
}

// logDirectory and logRelPath split the container's log into the
// sandbox's log directory and the container's path beneath it (the
// monitor opens the second beneath the first); both "" when it has none.
func logDirectory(rec *Container, sb *Sandbox) string {
	if rec.LogPath == "" {
		return ""
	}
	return sb.Config.GetLogDirectory()
}

func logRelPath(rec *Container, sb *Sandbox) string {
	if rec.LogPath == "" {
		return ""
	}
	return filepath.Clean(rec.Config.GetLogPath())
}

// prepareBundle mounts the rootfs and the image volumes and writes the
// OCI spec with the CDI devices' edits (steps 3 and 4).
func (s *Service) prepareBundle(rec *Container, sb *Sandbox, img image.Image, vols []imageVolume, devices []cdidevice.Request, rb *rollback) error {
	layers, err := s.cfg.Images.LayerPaths(img)
	if err != nil {
		return fmt.Errorf("image %s: layers: %w", img.ID, err)
	}
	rb.add("remove bundle", func(context.Context) error { return os.RemoveAll(rec.Bundle) })
	if err := os.MkdirAll(rec.Bundle, store.PrivateDirMode); err != nil {
		return fmt.Errorf("bundle: %w", err)
	}
	rb.add("unmount rootfs", func(context.Context) error {
		err := s.host.UnmountRootfs(rec.Rootfs)
		if err == nil && s.inUsernsDir(rec.Rootfs) {
			err = removeEmptyDir(rec.Rootfs) // its mount point, made by MountRootfs
		}
		return err
	})
	mounted := s.phase(opCreateContainer, "rootfs")
	err = s.host.MountRootfs(layers, filepath.Join(rec.Dir, "upper"), filepath.Join(rec.Dir, "work"), rec.Rootfs, rootfsIDMap(sb, filepath.Join(rec.Dir, idmapScratchPrefix+"rootfs")))
	mounted()
	if err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	imageVolumes, err := s.mountImageVolumes(rec, sb, vols, rb)
	if err != nil {
		return err
	}
	return s.writeSpec(rec, sb, img, imageVolumes, devices)
}

// writeSpec builds the OCI spec, applies the CDI devices' edits and writes
// the bundle's config.json (step 4). imageVolumes are what the image
// volumes bind, by mount index.
func (s *Service) writeSpec(rec *Container, sb *Sandbox, img image.Image, imageVolumes map[int]string, devices []cdidevice.Request) error {
	defer s.phase(opCreateContainer, "spec")() // the spec and config.json: the rest of this function
	targetPID, err := s.targetPID(rec.Config)
	if err != nil {
		return err
	}
	spec, err := oci.BuildSpec(oci.Input{
		TargetPID:      targetPID,
		ContainerID:    rec.ID,
		Config:         rec.Config,
		Sandbox:        ociSandbox(sb),
		Image:          oci.Image{Config: img.Config.Config, Name: rec.ImageName, Ref: img.ID},
		RootfsPath:     rec.Rootfs,
		OOMScoreAdjMin: s.oomScoreAdjMin,
		CgroupParent:   sb.Config.GetLinux().GetCgroupParent(),
		SystemdCgroup:  s.cfg.SystemdCgroup,
		// A private cgroup namespace on cgroup v2-only hosts; v1 and
		// hybrid hosts keep the host's, as containerd and CRI-O do.
		CgroupNamespace: s.cfg.Controllers.Unified,
		ImageVolumes:    imageVolumes,
	})
	if err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	if len(devices) > 0 {
		if err := s.cfg.Devices.Inject(spec, devices); err != nil {
			return fmt.Errorf("spec: %w", err)
		}
	}
	s.noteOOMClamp(rec.Config.GetLinux().GetResources().GetOomScoreAdj())
	s.fitResources(spec.Linux.Resources, "container "+rec.ID)
	rec.CgroupPath = spec.Linux.CgroupsPath
	if spec.Process != nil {
		uid, gid := int64(spec.Process.User.UID), int64(spec.Process.User.GID)
		rec.UID, rec.GID = &uid, &gid
		for _, g := range spec.Process.User.AdditionalGids {
			rec.Groups = append(rec.Groups, int64(g))
		}
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return fmt.Errorf("spec: encode: %w", err)
	}
	// The bundle is under the state directory, which a reboot clears: atomic,
	// not flushed.
	if err := store.WriteFileVolatile(filepath.Join(rec.Bundle, "config.json"), data, 0o600); err != nil {
		return fmt.Errorf("bundle config.json: %w", err)
	}
	return nil
}

// ociSandbox tells the spec builder what a container joins.
func ociSandbox(sb *Sandbox) oci.Sandbox {
	o := oci.Sandbox{
		ID:             sb.ID,
		Config:         sb.Config,
		NetNS:          sb.NetNS,
		IPCNS:          sb.IPCNS,
		UTSNS:          sb.UTSNS,
		HostnamePath:   sb.HostnamePath,
		HostsPath:      sb.HostsPath,
		ResolvConfPath: sb.ResolvConfPath,
		UserNS:         sb.UserNS,
	}
	if sb.PausePid != 0 {
		o.PIDNS = fmt.Sprintf("/proc/%d/ns/pid", sb.PausePid)
	}
	return o
}

// noteOOMClamp logs once that requested oom_score_adj values are raised.
func (s *Service) noteOOMClamp(requested int64) {
	if _, clamped := oci.ClampOOMScoreAdj(int(requested), s.oomScoreAdjMin); clamped && s.oomClampLogged.CompareAndSwap(false, true) {
		s.log.Warn("oom_score_adj below the daemon's own cannot be set without CAP_SYS_RESOURCE; clamping",
			"requested", requested, "applied", s.oomScoreAdjMin)
	}
}

// containerName is the reserved name of a container, unique per pod attempt.
func containerName(md *runtimeapi.ContainerMetadata, sb *runtimeapi.PodSandboxMetadata) string {
	return fmt.Sprintf("%s_%s_%s_%s_%d", md.GetName(), sb.GetName(), sb.GetNamespace(), sb.GetUid(), md.GetAttempt())
}

// addContainer makes a created container visible to readers.
func (s *Service) addContainer(rec Container) {
	e := &containerEntry{rec: rec, exited: make(chan struct{})}
	if rec.State == ContainerExited {
		close(e.exited)
	}
	s.mu.Lock()
	s.containers[rec.ID] = e
	s.mu.Unlock()
	if err := s.containerIDs.Add(rec.ID); err != nil {
		s.log.Warn("container id index", "id", rec.ID, "error", err)
	}
}

// targetPID is the pid of the container whose PID namespace a container with
// PID mode TARGET joins (ephemeral debug containers); 0 for other modes.
func (s *Service) targetPID(cfg *runtimeapi.ContainerConfig) (int, error) {
	opts := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if opts.GetPid() != runtimeapi.NamespaceMode_TARGET || opts.GetTargetId() == "" {
		return 0, nil
	}
	target, err := s.Container(opts.GetTargetId())
	if err != nil {
		return 0, fmt.Errorf("namespace options: target_id: %w", err)
	}
	if target.State != ContainerRunning && target.State != ContainerCreated || target.Pid == 0 {
		return 0, fmt.Errorf("namespace options: target container %s is %s, not running: %w", target.ID, target.State, errdefs.ErrFailedPrecondition)
	}
	return target.Pid, nil
}

package pod

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/monitor"
	"github.com/berth-dev/berth/internal/network"
	"github.com/berth-dev/berth/internal/oci"
	"github.com/berth-dev/berth/internal/store"
)

// RunSandbox creates and starts a pod sandbox and returns its id:
//  1. validate and reserve the name (a concurrent twin gets AlreadyExists);
//  2. write the intent record (state creating);
//  3. pin the net/ipc/uts namespaces;
//  4. CNI ADD, and at the same time the pod monitor, then berth-pause if
//     the pod shares one PID namespace;
//  5. write hostname, hosts, resolv.conf; 6. record ready.
//
// Any failure undoes the steps already done, newest first.
func (s *Service) RunSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (_ string, retErr error) {
	if err := validateSandboxConfig(cfg, handler, s.Handlers()); err != nil {
		return "", err
	}
	if err := s.validateUserns(cfg, handler); err != nil {
		return "", err
	}
	if err := oci.ValidateCgroupParent(cfg.GetLinux().GetCgroupParent(), s.cfg.SystemdCgroup); err != nil {
		return "", fmt.Errorf("config.linux: %w", err)
	}
	rec := Sandbox{
		ID:             store.GenerateID(),
		Name:           sandboxName(cfg.GetMetadata()),
		State:          SandboxCreating,
		CreatedAt:      time.Now(),
		RuntimeHandler: handler,
		HostNetwork:    namespaceMode(cfg).GetNetwork() == runtimeapi.NamespaceMode_NODE,
		Config:         cfg,
	}
	rec.MonitorSocket = s.monitorSocket(rec.ID)
	if !rec.HostNetwork {
		// The intent names the netns pin before it exists, so that recovery
		// can hand it to CNI DEL if the daemon dies during Setup.
		rec.NetNS = filepath.Join(s.podDir(rec.ID), "ns", "net")
	}
	started := time.Now()
	var rb rollback
	defer func() {
		if retErr != nil {
			rb.run(ctx, s.log, "sandbox "+rec.ID)
		}
	}()
	reserved := s.phase(opRunSandbox, "reserve_name")
	err := s.sandboxNames.Reserve(rec.Name, rec.ID)
	reserved()
	if err != nil {
		return "", fmt.Errorf("pod sandbox %q: %w", rec.Name, err)
	}
	rb.add("release name", func(context.Context) error { s.sandboxNames.Release(rec.Name); return nil })
	if m := sandboxUserns(cfg); m != nil {
		if err := s.userns.take(rec.ID, rec.Name, *m); err != nil {
			return "", fmt.Errorf("pod sandbox %q: %w", rec.Name, err)
		}
		rb.add("release user namespace mapping", func(context.Context) error { s.userns.release(rec.ID); return nil })
	}
	if err := s.saveSandbox(&rec); err != nil {
		return "", err
	}
	rb.add("remove record", func(context.Context) error { return os.RemoveAll(filepath.Dir(s.sandboxRecordPath(rec.ID))) })
	if err := s.setUpSandbox(ctx, &rec, &rb); err != nil {
		return "", err
	}
	rec.State = SandboxReady
	if err := s.saveSandbox(&rec); err != nil {
		return "", err
	}
	s.addSandbox(rec)
	if s.watchMonitor(rec.ID, rec.MonitorPid, rec.MonitorSocket) {
		go s.monitorDied(rec.ID, rec.MonitorPid) //nolint:gosec // G118: the takeover outlives the request that launched the monitor
	}
	s.sandboxStarted(rec.ID)
	s.log.Info("pod sandbox ready", "id", rec.ID, "name", rec.Name, "ips", rec.IPs, "duration", time.Since(started))
	return rec.ID, nil
}

// setUpSandbox performs steps 3–5 of RunSandbox, registering an undo for each.
func (s *Service) setUpSandbox(ctx context.Context, rec *Sandbox, rb *rollback) error {
	cfg := rec.Config
	dir := s.podDir(rec.ID)
	rb.add("remove pod dir", func(context.Context) error { return os.RemoveAll(dir) })
	if err := os.MkdirAll(dir, store.PrivateDirMode); err != nil {
		return fmt.Errorf("pod sandbox %s: pod dir: %w", rec.ID, err)
	}
	if err := s.makeUsernsPodDir(rec, rb); err != nil {
		return err
	}
	pinned := s.phase(opRunSandbox, "pin_namespaces")
	ns, err := s.host.PinNamespaces(network.PinOptions{
		Dir:      filepath.Join(dir, "ns"),
		Net:      !rec.HostNetwork,
		IPC:      namespaceMode(cfg).GetIpc() != runtimeapi.NamespaceMode_NODE,
		UTS:      !rec.HostNetwork,
		Hostname: cfg.GetHostname(),
		User:     sandboxUserns(cfg),
		Holder:   []string{s.cfg.PausePath},
	})
	pinned()
	if err != nil {
		return fmt.Errorf("pod sandbox %s: namespaces: %w", rec.ID, err)
	}
	rb.add("unpin namespaces", func(context.Context) error { return s.host.UnpinNamespaces(filepath.Join(dir, "ns")) })
	rec.NetNS, rec.IPCNS, rec.UTSNS, rec.UserNS = ns.Net, ns.IPC, ns.UTS, ns.User
	// CNI ADD on one side; the monitor and then berth-pause (which the
	// monitor starts) on the other: they need nothing of each other but
	// the pinned namespaces. Each side writes fields of rec of its own.
	var monRB rollback
	var monErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		if monErr = s.startMonitor(rec, &monRB); monErr != nil {
			return
		}
		if namespaceMode(cfg).GetPid() == runtimeapi.NamespaceMode_POD {
			paused := s.phase(opRunSandbox, "pause")
			monErr = s.startPause(ctx, rec, &monRB)
			paused()
		}
	}()
	netErr := s.setUpNetwork(ctx, rec, rb)
	<-done
	rb.steps = append(rb.steps, monRB.steps...)
	if err := errors.Join(netErr, monErr); err != nil {
		return err
	}
	if err := s.writePodFiles(rec, dir); err != nil {
		return fmt.Errorf("pod sandbox %s: %w", rec.ID, err)
	}
	return nil
}

// setUpNetwork runs CNI ADD for a pod that has its own network namespace.
func (s *Service) setUpNetwork(ctx context.Context, rec *Sandbox, rb *rollback) error {
	if rec.HostNetwork {
		return nil
	}
	defer s.phase(opRunSandbox, "cni")()
	res, err := s.cfg.Network.Setup(ctx, attachment(rec))
	if err != nil {
		return fmt.Errorf("pod sandbox %s: network: %w", rec.ID, err)
	}
	rb.add("tear down network", func(ctx context.Context) error { return s.cfg.Network.Teardown(ctx, attachment(rec)) })
	for _, ip := range res.IPs {
		rec.IPs = append(rec.IPs, ip.String())
	}
	return nil
}

// writePodFiles writes the hostname, hosts and resolv.conf files that every
// container of the pod bind-mounts.
func (s *Service) writePodFiles(rec *Sandbox, dir string) error {
	defer s.phase(opRunSandbox, "pod_files")()
	cfg := rec.Config
	hostname := cfg.GetHostname()
	if hostname == "" || rec.HostNetwork {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("hostname: %w", err)
		}
		hostname = h
	}
	rec.HostnamePath = filepath.Join(dir, "hostname")
	rec.HostsPath = filepath.Join(dir, "hosts")
	rec.ResolvConfPath = filepath.Join(dir, "resolv.conf")
	if err := network.WriteHostname(rec.HostnamePath, hostname); err != nil {
		return fmt.Errorf("hostname file: %w", err)
	}
	var ips []net.IP
	for _, ip := range rec.IPs {
		ips = append(ips, net.ParseIP(ip))
	}
	if err := network.WriteHosts(rec.HostsPath, hostname, ips, rec.HostNetwork); err != nil {
		return fmt.Errorf("hosts file: %w", err)
	}
	var dns *network.DNS
	if d := cfg.GetDnsConfig(); d != nil {
		dns = &network.DNS{Servers: d.GetServers(), Searches: d.GetSearches(), Options: d.GetOptions()}
	}
	if err := network.WriteResolvConf(rec.ResolvConfPath, dns, s.cfg.HostResolvConf); err != nil {
		return fmt.Errorf("resolv.conf: %w", err)
	}
	if m := sandboxUserns(cfg); m != nil {
		// The pod's root owns its files, as the host's root does elsewhere.
		for _, p := range []string{rec.HostnamePath, rec.HostsPath, rec.ResolvConfPath} {
			if err := os.Lchown(p, int(m.RootUID()), int(m.RootGID())); err != nil {
				return fmt.Errorf("pod files: %w", err)
			}
		}
	}
	return nil
}

// startMonitor launches the pod's berth-monitor.
func (s *Service) startMonitor(rec *Sandbox, rb *rollback) error {
	defer s.phase(opRunSandbox, "monitor")()
	pid, err := s.monitors.Launch(s.monitorLaunchOptions(rec))
	if err != nil {
		return fmt.Errorf("pod sandbox %s: monitor: %w", rec.ID, err)
	}
	rec.MonitorPid = pid
	rb.add("stop monitor", func(ctx context.Context) error { return s.monitors.Stop(ctx, rec.MonitorSocket, pid) })
	return nil
}

// monitorLaunchOptions say how to launch the pod's monitor (at start, or
// to take the pod over from one that died).
func (s *Service) monitorLaunchOptions(rec *Sandbox) monitor.LaunchOptions {
	return monitor.LaunchOptions{
		Binary:   s.cfg.MonitorPath,
		PodID:    rec.ID,
		Socket:   rec.MonitorSocket,
		ExitDir:  s.exitsDir(),
		RuncPath: s.runcOf(rec.RuntimeHandler).RuncPath,
		RuncRoot: s.runcOf(rec.RuntimeHandler).RuncRoot,
		LogFile:  filepath.Join(s.podDir(rec.ID), "monitor.log"),
	}
}

// attachment describes a sandbox to CNI; Setup and Teardown get the same one.
func attachment(rec *Sandbox) network.Attachment {
	md := rec.Config.GetMetadata()
	a := network.Attachment{
		PodID:        rec.ID,
		PodName:      md.GetName(),
		PodNamespace: md.GetNamespace(),
		PodUID:       md.GetUid(),
		NetnsPath:    rec.NetNS,
		SetUpAt:      rec.CreatedAt,
	}
	for _, pm := range rec.Config.GetPortMappings() {
		a.PortMappings = append(a.PortMappings, network.PortMapping{
			HostPort:      pm.GetHostPort(),
			ContainerPort: pm.GetContainerPort(),
			Protocol:      protocolName(pm.GetProtocol()),
			HostIP:        pm.GetHostIp(),
		})
	}
	return a
}

func protocolName(p runtimeapi.Protocol) string {
	switch p {
	case runtimeapi.Protocol_UDP:
		return "udp"
	case runtimeapi.Protocol_SCTP:
		return "sctp"
	default:
		return "tcp"
	}
}

func namespaceMode(cfg *runtimeapi.PodSandboxConfig) *runtimeapi.NamespaceOption {
	return cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
}

// sandboxName is the reserved name of a sandbox, unique per pod attempt.
func sandboxName(md *runtimeapi.PodSandboxMetadata) string {
	return fmt.Sprintf("%s_%s_%s_%d", md.GetName(), md.GetNamespace(), md.GetUid(), md.GetAttempt())
}

// addSandbox makes a ready record visible to readers.
func (s *Service) addSandbox(rec Sandbox) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sandboxes[rec.ID] = &sandboxEntry{rec: rec}
	if err := s.sandboxIDs.Add(rec.ID); err != nil && !errors.Is(err, errdefs.ErrAlreadyExists) {
		s.log.Warn("sandbox id index", "id", rec.ID, "error", err)
	}
}

package pod

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
)

func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%s: %s: %w", field, fmt.Sprintf(format, args...), errdefs.ErrInvalidArgument)
}

// validateSandboxConfig checks a RunPodSandbox request before any side effect.
// handlers are the runtime handlers berth serves ("" the default's).
func validateSandboxConfig(cfg *runtimeapi.PodSandboxConfig, handler string, handlers []string) error {
	if cfg == nil {
		return invalid("config", "missing")
	}
	if !slices.Contains(handlers, handler) {
		quoted := make([]string, len(handlers))
		for i, h := range handlers {
			quoted[i] = strconv.Quote(h)
		}
		return invalid("runtime_handler", "unknown handler %q (berth serves %s)", handler, strings.Join(quoted, ", "))
	}
	md := cfg.GetMetadata()
	if md == nil {
		return invalid("config.metadata", "missing")
	}
	for field, v := range map[string]string{"name": md.GetName(), "namespace": md.GetNamespace(), "uid": md.GetUid()} {
		if v == "" {
			return invalid("config.metadata."+field, "empty")
		}
		if strings.ContainsAny(v, "/\x00") {
			return invalid("config.metadata."+field, "%q contains '/' or NUL", v)
		}
	}
	if d := cfg.GetLogDirectory(); d != "" && !filepath.IsAbs(d) {
		return invalid("config.log_directory", "%q is not absolute", d)
	}
	if h := cfg.GetHostname(); len(h) > 64 || strings.ContainsAny(h, "/ \x00") {
		return invalid("config.hostname", "%q is not a valid hostname", h)
	}
	for i, pm := range cfg.GetPortMappings() {
		field := fmt.Sprintf("config.port_mappings[%d]", i)
		if pm.GetContainerPort() <= 0 || pm.GetContainerPort() > 65535 {
			return invalid(field+".container_port", "%d out of range 1-65535", pm.GetContainerPort())
		}
		if pm.GetHostPort() < 0 || pm.GetHostPort() > 65535 {
			return invalid(field+".host_port", "%d out of range 0-65535", pm.GetHostPort())
		}
	}
	ns := namespaceMode(cfg)
	if ns.GetPid() == runtimeapi.NamespaceMode_TARGET {
		return invalid("config.linux.security_context.namespace_options.pid", "TARGET is only valid for containers")
	}
	return nil
}

// validateContainerConfig checks a CreateContainer request before any side effect.
func validateContainerConfig(cfg *runtimeapi.ContainerConfig, sandboxCfg *runtimeapi.PodSandboxConfig) error {
	if cfg == nil {
		return invalid("config", "missing")
	}
	if sandboxCfg == nil {
		return invalid("sandbox_config", "missing")
	}
	md := cfg.GetMetadata()
	if md == nil || md.GetName() == "" {
		return invalid("config.metadata.name", "empty")
	}
	if strings.ContainsAny(md.GetName(), "/\x00") {
		return invalid("config.metadata.name", "%q contains '/' or NUL", md.GetName())
	}
	if cfg.GetImage().GetImage() == "" {
		return invalid("config.image.image", "empty")
	}
	if lp := cfg.GetLogPath(); lp != "" {
		if filepath.IsAbs(lp) || strings.HasPrefix(filepath.Clean(lp), "..") {
			return invalid("config.log_path", "%q must be relative to the sandbox's log_directory", lp)
		}
	}
	for i, m := range cfg.GetMounts() {
		field := fmt.Sprintf("config.mounts[%d]", i)
		if !filepath.IsAbs(m.GetContainerPath()) {
			return invalid(field+".container_path", "%q is not absolute", m.GetContainerPath())
		}
		if m.GetImage() == nil && !filepath.IsAbs(m.GetHostPath()) {
			return invalid(field+".host_path", "%q is not absolute", m.GetHostPath())
		}
		if err := checkImageVolume(m); err != nil {
			return fmt.Errorf("%s.%w", field, err)
		}
	}
	for i, kv := range cfg.GetEnvs() {
		if kv.GetKey() == "" || strings.ContainsAny(kv.GetKey(), "=\x00") {
			return invalid(fmt.Sprintf("config.envs[%d].key", i), "%q is not a valid variable name", kv.GetKey())
		}
		// Bytes since CRI v0.37; an execve environment string ends at NUL.
		if bytes.IndexByte(kv.GetValue(), 0) >= 0 {
			return invalid(fmt.Sprintf("config.envs[%d].value", i), "variable %s: holds a NUL byte", kv.GetKey())
		}
	}
	return nil
}

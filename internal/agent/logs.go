package agent

import (
	"context"
	"path/filepath"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/logrotate"
	"github.com/berth-dev/berth/internal/agent/podspec"
)

// newLogManager is the agent's container log rotation (package
// logrotate) over its runtime: the logs of the running containers of the
// agent's pods, beneath its pod log directory.
func newLogManager(cfg Config) (*logrotate.Manager, error) {
	return logrotate.New(logrotate.Config{
		Root:       cfg.PodLogDir,
		Policy:     cfg.LogRotation,
		Containers: func(ctx context.Context) ([]logrotate.Container, error) { return runningLogs(ctx, cfg) },
		Reopen:     cfg.Runtime.ReopenContainerLog,
		Clock:      cfg.Clock,
		Logger:     cfg.Logger.With("component", "agent", "loop", "log rotation"),
	})
}

// runningLogs lists the running containers of the agent's pods with their
// log files, as the runtime reports them (relative ones beneath the pod's
// log directory). A container that stops meanwhile is left out.
func runningLogs(ctx context.Context, cfg Config) ([]logrotate.Container, error) {
	sandboxes, err := cfg.Runtime.ListPodSandbox(ctx, map[string]string{podspec.LabelAgent: "true"})
	if err != nil {
		return nil, err
	}
	logDirs := map[string]string{}
	for _, sb := range sandboxes {
		m := sb.GetMetadata()
		logDirs[sb.GetId()] = podspec.PodLogDirectory(cfg.PodLogDir, m.GetNamespace(), m.GetName(), m.GetUid())
	}
	containers, err := cfg.Runtime.ListContainers(ctx, nil)
	if err != nil {
		return nil, err
	}
	var out []logrotate.Container
	for _, c := range containers {
		logDir, ours := logDirs[c.GetPodSandboxId()]
		if !ours || c.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		st, err := cfg.Runtime.ContainerStatus(ctx, c.GetId())
		if err != nil || st.GetLogPath() == "" || st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		path := st.GetLogPath()
		if !filepath.IsAbs(path) {
			path = filepath.Join(logDir, path)
		}
		out = append(out, logrotate.Container{ID: c.GetId(), LogPath: path})
	}
	return out, nil
}

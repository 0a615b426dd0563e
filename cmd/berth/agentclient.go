package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/config"
	"github.com/berth-dev/berth/internal/store"
)

// runtimeEndpointFlag is the global --runtime-endpoint: the CRI socket the
// agent and `berth exec` talk to (default: berth's own socket).
var runtimeEndpointFlag string

func bindAgentFlags(root *cobra.Command) {
	root.PersistentFlags().StringVar(&runtimeEndpointFlag, "runtime-endpoint", "",
		"CRI runtime endpoint, unix:///path (default berth's own socket)")
}

// runtimeEndpoint is --runtime-endpoint, else berth's CRI socket.
func runtimeEndpoint(cfg config.Config) string {
	if runtimeEndpointFlag != "" {
		return runtimeEndpointFlag
	}
	return "unix://" + cfg.Socket
}

// agentSocket is where the agent of this state directory listens.
func agentSocket(cfg config.Config) string {
	return filepath.Join(cfg.StateDir, agentapi.SocketName)
}

// connectAgent returns a client of the running agent, or an error that
// says how to start one.
func connectAgent(cmd *cobra.Command, opts *globalOptions) (*agentapi.Client, error) {
	cfg, err := opts.load(cmd)
	if err != nil {
		return nil, err
	}
	client := agentapi.NewClient(agentSocket(cfg))
	if !client.Reachable(cmd.Context()) {
		return nil, fmt.Errorf("no berth agent answers on %s: start one with 'berth serve' (or 'berth run -f FILE')", client.Socket())
	}
	return client, nil
}

// ensureAgent returns a client of the running agent; when none answers it
// starts `berth serve` detached (its own session, log under the state
// dir) and waits for the agent's socket.
func ensureAgent(cmd *cobra.Command, opts *globalOptions) (*agentapi.Client, error) {
	cfg, err := opts.load(cmd)
	if err != nil {
		return nil, err
	}
	client := agentapi.NewClient(agentSocket(cfg))
	if client.Reachable(cmd.Context()) {
		return client, nil
	}
	logPath, err := startDetachedServe(cmd, cfg)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "started berth serve in the background (log: %s)\n", logPath)
	ctx, cancel := context.WithTimeout(cmd.Context(), 60*time.Second)
	defer cancel()
	for !client.Reachable(ctx) {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("berth serve started but its agent did not answer on %s within 60s; see %s", client.Socket(), logPath)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return client, nil
}

// startDetachedServe runs this executable's `serve` with the same global
// flags in a new session, so that it outlives this command and its
// terminal.
func startDetachedServe(cmd *cobra.Command, cfg config.Config) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("start berth serve: find own executable: %w", err)
	}
	if err := store.MkdirTraversable(cfg.StateDir); err != nil {
		return "", fmt.Errorf("start berth serve: state directory %s: %w", cfg.StateDir, err)
	}
	logPath := filepath.Join(cfg.StateDir, "berth-serve.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", fmt.Errorf("start berth serve: log %s: %w", logPath, err)
	}
	defer logFile.Close()
	args := append([]string{"serve"}, passedGlobalFlags(cmd)...)
	serve := exec.Command(self, args...)
	serve.Stdout, serve.Stderr = logFile, logFile
	serve.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := serve.Start(); err != nil {
		return "", fmt.Errorf("start berth serve: %w", err)
	}
	// Not waited for: it is the daemon. Release it so no zombie stays
	// when this command runs long.
	if err := serve.Process.Release(); err != nil {
		return "", fmt.Errorf("start berth serve: release: %w", err)
	}
	return logPath, nil
}

// passedGlobalFlags repeats the global flags the user set, for the daemon
// this command starts.
func passedGlobalFlags(cmd *cobra.Command) []string {
	var args []string
	global := cmd.Root().PersistentFlags()
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if global.Lookup(f.Name) == nil || f.Name == "runtime-endpoint" || f.Name == "help" {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				args = append(args, "--"+f.Name+"="+v)
			}
			return
		}
		args = append(args, "--"+f.Name+"="+f.Value.String())
	})
	return args
}

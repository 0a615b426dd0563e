package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/internal/progress"
)

// pullOptions are the flags of `berth pull`.
type pullOptions struct {
	creds string // "user:password"
	quiet bool
}

func newPullCommand(opts *globalOptions) *cobra.Command {
	var po pullOptions
	cmd := &cobra.Command{
		Use:   "pull IMAGE",
		Short: "Pull an image from a registry into berth's store",
		Long: fmt.Sprintf(`Pull an image from its registry (or the mirrors configured for it, see
docs/registry.md) straight into berth's store, showing per-layer progress
on stderr: bars when stderr is a terminal, plain lines otherwise. The image
id is printed on stdout. Works with and without 'berth serve' running.

IMAGE is NAME[:TAG] or NAME@sha256:DIGEST; short names expand as kubelet
expands them (busybox is %s/library/busybox:latest).

Credentials: --creds USER:PASSWORD, else the entry for the registry in a
docker-style config.json ($DOCKER_CONFIG/config.json or
~/.docker/config.json, credential helpers included), else anonymous.`, image.DefaultDomain),
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPull(cmd, opts, po, args[0])
		},
	}
	cmd.Flags().StringVar(&po.creds, "creds", "", "registry credentials as USER:PASSWORD")
	cmd.Flags().BoolVarP(&po.quiet, "quiet", "q", false, "show no progress; print only the image id")
	return cmd
}

func runPull(cmd *cobra.Command, opts *globalOptions, po pullOptions, ref string) error {
	auth, err := parseCreds(po.creds)
	if err != nil {
		return err
	}
	store, err := openPullStore(cmd, opts)
	if err != nil {
		return err
	}
	normalized, err := image.NormalizeRef(ref)
	if err != nil {
		return fmt.Errorf("pull %q: %w; use NAME[:TAG] or NAME@sha256:DIGEST", ref, err)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	pullOpts := image.PullOptions{Auth: auth, DockerConfig: auth == nil}
	var finish func(error)
	if !po.quiet {
		pullOpts.Progress, finish = startProgress(ctx, cmd.ErrOrStderr(), normalized)
	}
	img, err := store.Pull(ctx, ref, pullOpts)
	if finish != nil {
		finish(err)
	}
	if err != nil {
		return pullError(ref, normalized, err)
	}
	fmt.Fprintln(cmd.OutOrStdout(), img.ID)
	return nil
}

// parseCreds turns "user:password" into pull credentials; "" is nil (the
// config.json keychain or anonymous).
func parseCreds(creds string) (*image.Auth, error) {
	if creds == "" {
		return nil, nil
	}
	user, pass, ok := strings.Cut(creds, ":")
	if !ok || user == "" {
		return nil, fmt.Errorf("flag --creds: want USER:PASSWORD: %w", errdefs.ErrInvalidArgument)
	}
	return &image.Auth{Username: user, Password: pass}, nil
}

// startProgress starts a renderer on w and, on a terminal, its redraw
// ticker (10 a second). finish stops the ticker and prints the last state.
func startProgress(ctx context.Context, w io.Writer, ref string) (func(image.PullProgress), func(error)) {
	tty, width := terminalOf(w)
	r := progress.New(w, progress.Options{Ref: ref, Terminal: tty, Width: width})
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if !tty {
			return
		}
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				r.Tick()
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	update := func(p image.PullProgress) {
		r.Update(progress.Event{Layer: p.Layer, State: progress.State(p.State), Done: p.Done, Total: p.Total})
	}
	finish := func(err error) {
		close(done)
		<-stopped
		r.Finish(err)
	}
	return update, finish
}

// terminalOf reports whether w is a terminal that shows redrawn progress,
// and its width (progress.Terminal); anything but a file is not.
func terminalOf(w io.Writer) (bool, func() int) {
	if f, ok := w.(*os.File); ok {
		return progress.Terminal(f)
	}
	return false, nil
}

// pullError adds to a pull error what the user can do about it, and the
// reference when the error does not name it already.
func pullError(ref, normalized string, err error) error {
	if msg := err.Error(); !strings.Contains(msg, ref) && !strings.Contains(msg, normalized) {
		err = fmt.Errorf("pull %q: %w", ref, err)
	}
	var hint string
	switch {
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("pull %q: interrupted; nothing was added to the store", ref)
	case errdefs.IsNotFound(err):
		hint = "check the name and tag, and that the registry (or its mirror) has it"
	case errors.Is(err, errdefs.ErrFailedPrecondition):
		hint = "pass --creds USER:PASSWORD, or add the registry to a docker-style config.json"
	case errors.Is(err, errdefs.ErrInvalidArgument):
		hint = "IMAGE is NAME[:TAG] or NAME@sha256:DIGEST; a hosts.toml error names its file (docs/registry.md)"
	case errors.Is(err, errdefs.ErrUnavailable):
		hint = "check that the registry is reachable, and its mirrors and TLS settings in the hosts config (docs/registry.md); then retry"
	default:
		return err
	}
	return fmt.Errorf("%w\n  hint: %s", err, hint)
}

// openPullStore opens the store with the [registry] settings of the config
// (hosts dir, download slots, stall detection).
func openPullStore(cmd *cobra.Command, opts *globalOptions) (*image.Store, error) {
	cfg, err := opts.load(cmd)
	if err != nil {
		return nil, err
	}
	store, err := openImageStore(cfg)
	if err != nil {
		return nil, err
	}
	store.ConfigurePull(pullConfig(cfg))
	return store, nil
}

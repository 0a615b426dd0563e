package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/config"
	"github.com/berth-dev/berth/internal/criserver"
	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/internal/pod"
	"github.com/berth-dev/berth/internal/store"
)

// daemonWait bounds how long the CLI waits for a daemon that is still
// recovering (it answers Unavailable until then).
const daemonWait = 15 * time.Second

// imageUsers maps an image id to the ids of the containers that use it
// (pod.Container.ImageIDs: their own image and their image volumes').
type imageUsers map[string][]string

// findImageUsers lists which images containers use. When the daemon answers
// on its socket it is asked over CRI (ListContainers); the container records
// under <root>/containers are read in any case, so that a container being
// created, or one whose daemon is stopped, still protects its images, and
// so that image volumes' images (which ListContainers does not report)
// count.
// Unreadable records are reported on warn and skipped, as the daemon skips
// them.
func findImageUsers(ctx context.Context, cfg config.Config, warn io.Writer) (imageUsers, error) {
	users := imageUsers{}
	if daemonListening(cfg.Socket) {
		if err := addCRIUsers(ctx, cfg.Socket, users); err != nil {
			return nil, err
		}
	}
	if err := addRecordUsers(filepath.Join(cfg.RootDir, "containers"), users, warn); err != nil {
		return nil, err
	}
	for id := range users {
		sort.Strings(users[id])
		users[id] = compactSorted(users[id])
	}
	return users, nil
}

// daemonListening reports whether something accepts connections on the
// socket; a stale socket file of a stopped daemon refuses them.
func daemonListening(socket string) bool {
	conn, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// addCRIUsers asks the daemon for its containers, waiting while it recovers.
func addCRIUsers(ctx context.Context, socket string, users imageUsers) error {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(criserver.MaxMessageSize)))
	if err != nil {
		return fmt.Errorf("daemon socket %s: %w", socket, err)
	}
	defer conn.Close()
	client := runtimeapi.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(ctx, daemonWait)
	defer cancel()
	for {
		resp, err := client.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
		if err == nil {
			for _, c := range resp.GetContainers() {
				users[c.GetImageRef()] = append(users[c.GetImageRef()], c.GetId())
			}
			return nil
		}
		if status.Code(err) != codes.Unavailable || ctx.Err() != nil {
			return fmt.Errorf("daemon socket %s: list containers to find the images in use: %v "+
				"(retry when 'berth serve' is ready, or stop it to work on the store alone): %w",
				socket, err, errdefs.ErrUnavailable)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// addRecordUsers reads the durable container records, quarantined ones
// too. A record removed meanwhile is skipped silently, a corrupt one with a
// warning.
func addRecordUsers(dir string, users imageUsers, warn io.Writer) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("container records %s: %w", dir, err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		var rec pod.Container
		path := filepath.Join(dir, e.Name(), "container.json")
		err := store.LoadJSON(path, &rec)
		if errdefs.IsNotFound(err) {
			// A record the daemon quarantined may still name its image.
			err = store.LoadJSON(path+pod.QuarantineSuffix, &rec)
			rec.ID = e.Name()
		}
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			fmt.Fprintf(warn, "berth: warning: container %s: %v; its image is not protected\n", e.Name(), err)
			continue
		}
		for _, id := range rec.ImageIDs() {
			users[id] = append(users[id], rec.ID)
		}
	}
	return nil
}

func compactSorted(list []string) []string {
	out := list[:0]
	for i, v := range list {
		if i == 0 || v != list[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// storeAndImageUsers opens the image store and finds the images containers
// use, for the commands that remove images.
func storeAndImageUsers(cmd *cobra.Command, opts *globalOptions) (*image.Store, imageUsers, error) {
	cfg, err := opts.load(cmd)
	if err != nil {
		return nil, nil, err
	}
	store, err := openStore(cmd, opts)
	if err != nil {
		return nil, nil, err
	}
	users, err := findImageUsers(cmd.Context(), cfg, cmd.ErrOrStderr())
	if err != nil {
		return nil, nil, err
	}
	return store, users, nil
}

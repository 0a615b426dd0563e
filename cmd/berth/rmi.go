package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/internal/progress"
)

func newRmiCommand(opts *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "rmi IMAGE...",
		Short: "Remove images from berth's store",
		Long: `Remove images, with all their tags, and the blobs and unpacked layers no
other image needs. IMAGE is a name (busybox, registry:5000/app:v1), a
name@sha256:digest, an image id or a unique id prefix.

An image a container uses is refused: remove the container first. The
containers are those the daemon lists over CRI when it answers on its
socket, plus every container record under <root>/containers (so a
stopped daemon's containers keep their images too).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			store, users, err := storeAndImageUsers(cmd, opts)
			if err != nil {
				return err
			}
			return removeImages(cmd.OutOrStdout(), store, users, args)
		},
	}
}

// removeImages resolves every reference first (so two names of one image
// remove it once), then removes those no container uses. It goes on past a
// failed reference and reports all failures at the end.
func removeImages(out io.Writer, store *image.Store, users imageUsers, refs []string) error {
	var errs []error
	var targets []image.Image
	seen := map[string]bool{}
	for _, ref := range refs {
		img, err := store.Resolve(ref)
		switch {
		case errdefs.IsNotFound(err):
			errs = append(errs, fmt.Errorf("image %q: not in berth's store ('berth images' lists what it has): %w", ref, errdefs.ErrNotFound))
		case err != nil:
			errs = append(errs, err) // names the reference already
		case len(users[img.ID]) > 0:
			errs = append(errs, fmt.Errorf("image %q (%s): used by container %s; remove the container first: %w",
				ref, shortID(img.ID), strings.Join(users[img.ID], ", "), errdefs.ErrFailedPrecondition))
		case !seen[img.ID]:
			seen[img.ID] = true
			targets = append(targets, img)
		}
	}
	for _, img := range targets {
		if err := store.Remove(img.ID); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("image %s: remove: %w", img.ID, err))
			continue
		}
		printDeleted(out, img)
	}
	return errors.Join(errs...)
}

// printDeleted names a removed image by its tags, or its id when untagged.
func printDeleted(out io.Writer, img image.Image) {
	names := img.RepoTags
	if len(names) == 0 {
		names = []string{img.ID}
	}
	for _, n := range names {
		fmt.Fprintf(out, "Deleted: %s\n", n)
	}
}

func newPruneCommand(opts *globalOptions) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Remove images no container uses",
		Long: `Remove images no container uses, and the blobs and unpacked layers only they
needed; print each removed image and the disk space freed.

By default only untagged images are removed (those whose tags moved to a
newer image, or pulled by digest and never tagged). With -a/--all every
image no container uses is removed, tagged or not, as 'crictl rmi --prune'
does.

Containers are those the daemon lists over CRI when it answers on its
socket, plus every container record under <root>/containers; their state
does not matter (an exited container still protects its image).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, users, err := storeAndImageUsers(cmd, opts)
			if err != nil {
				return err
			}
			return pruneImages(cmd.OutOrStdout(), store, users, all)
		},
	}
	cmd.Flags().BoolVarP(&all, "all", "a", false, "remove every unused image, not only untagged ones")
	return cmd
}

// pruneCandidates are the images prune removes: unused, and untagged
// unless all is set.
func pruneCandidates(imgs []image.Image, users imageUsers, all bool) (remove []image.Image, taggedUnused int) {
	for _, img := range imgs {
		switch {
		case len(users[img.ID]) > 0:
		case all || len(img.RepoTags) == 0:
			remove = append(remove, img)
		default:
			taggedUnused++
		}
	}
	return remove, taggedUnused
}

// pruneImages removes the candidates one by one by id, so that an image
// that arrives meanwhile (a concurrent pull) is never touched.
func pruneImages(out io.Writer, store *image.Store, users imageUsers, all bool) error {
	imgs, err := store.List()
	if err != nil {
		return err
	}
	remove, tagged := pruneCandidates(imgs, users, all)
	before, _, err := store.Usage()
	if err != nil {
		return err
	}
	removed := 0
	for _, img := range remove {
		if err := store.Remove(img.ID); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("image %s: remove: %w", img.ID, err)
		}
		printDeleted(out, img)
		removed++
	}
	after, _, err := store.Usage()
	if err != nil {
		return err
	}
	freed := int64(before) - int64(after)
	fmt.Fprintf(out, "Removed %s, freed %s\n", countImages(removed), progress.FormatBytes(freed))
	if !all && tagged > 0 {
		fmt.Fprintf(out, "%s tagged but unused; 'berth image prune -a' removes them too\n", countImages(tagged))
	}
	return nil
}

func countImages(n int) string {
	if n == 1 {
		return "1 image"
	}
	return fmt.Sprintf("%d images", n)
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/berth-dev/berth/internal/config"
	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/internal/progress"
)

// listOptions are the flags of `berth images`.
type listOptions struct {
	output  string // table, json or yaml
	quiet   bool
	digests bool
	noTrunc bool
}

func newImagesCommand(opts *globalOptions, use string) *cobra.Command {
	var lo listOptions
	cmd := &cobra.Command{
		Use:   use,
		Short: "List the images in berth's store",
		Long: `List the images in berth's store, one row per tag, like 'crictl images'.
Untagged images show <none>. Works with and without 'berth serve' running.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := openStore(cmd, opts)
			if err != nil {
				return err
			}
			imgs, err := store.List()
			if err != nil {
				return err
			}
			return writeImages(cmd.OutOrStdout(), imgs, lo)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&lo.output, "output", "o", "table", "output format: table, json or yaml")
	f.BoolVarP(&lo.quiet, "quiet", "q", false, "print image ids only")
	f.BoolVar(&lo.digests, "digests", false, "show a DIGEST column (the repo digest)")
	f.BoolVar(&lo.noTrunc, "no-trunc", false, "show full image ids and digests")
	return cmd
}

// openStore opens the image store under the configured root.
func openStore(cmd *cobra.Command, opts *globalOptions) (*image.Store, error) {
	cfg, err := opts.load(cmd)
	if err != nil {
		return nil, err
	}
	return openImageStore(cfg)
}

// openImageStore opens the image store under the configured root, with
// the [images] unpack limits.
func openImageStore(cfg config.Config) (*image.Store, error) {
	store, err := image.Open(filepath.Join(cfg.RootDir, "images"))
	if err != nil {
		return nil, err
	}
	store.SetLimits(imageLimits(cfg))
	return store, nil
}

// imageLimits is the image store's view of the [images] section.
func imageLimits(cfg config.Config) image.Limits {
	l := cfg.Images.Limits()
	return image.Limits{
		MaxEntrySize: l.MaxFileSize,
		MaxLayerSize: l.MaxLayerSize,
		MaxImageSize: l.MaxImageSize,
		MaxEntries:   l.MaxLayerEntries,
		MinFree:      image.Reserve{Bytes: l.MinFreeBytes, Percent: l.MinFreePercent},
	}
}

// writeImages prints imgs in the format lo asks for.
func writeImages(w io.Writer, imgs []image.Image, lo listOptions) error {
	if lo.quiet {
		for _, img := range imgs {
			fmt.Fprintln(w, img.ID)
		}
		return nil
	}
	switch lo.output {
	case "table", "":
		return writeImageTable(w, imgs, lo)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(imageListOf(imgs))
	case "yaml":
		return writeImageYAML(w, imageListOf(imgs))
	default:
		return fmt.Errorf("flag --output %q: want table, json or yaml: %w", lo.output, errdefs.ErrInvalidArgument)
	}
}

// imageRow is one line of the table: an image under one of its tags.
type imageRow struct{ repo, tag, digest, id, size string }

func imageRows(imgs []image.Image, noTrunc bool) []imageRow {
	var rows []imageRow
	for _, img := range imgs {
		digestRepo, digest := "<none>", "<none>"
		if len(img.RepoDigests) > 0 {
			digestRepo, digest, _ = strings.Cut(img.RepoDigests[0], "@")
		}
		id := img.ID
		if !noTrunc {
			id, digest = shortID(id), shortID(digest)
		}
		size := progress.FormatBytes(img.Size)
		if len(img.RepoTags) == 0 {
			rows = append(rows, imageRow{digestRepo, "<none>", digest, id, size})
		}
		for _, rt := range img.RepoTags {
			repo, tag := splitRepoTag(rt)
			rows = append(rows, imageRow{repo, tag, digest, id, size})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].repo != rows[j].repo {
			return rows[i].repo < rows[j].repo
		}
		return rows[i].tag < rows[j].tag
	})
	return rows
}

// splitRepoTag splits "host:5000/a/b:tag" at the tag's colon.
func splitRepoTag(rt string) (repo, tag string) {
	i := strings.LastIndex(rt, ":")
	if i < 0 || strings.Contains(rt[i:], "/") {
		return rt, "<none>"
	}
	return rt[:i], rt[i+1:]
}

// shortID is the first 13 hex digits of a digest, as crictl shows ids.
func shortID(d string) string {
	hex := strings.TrimPrefix(d, "sha256:")
	return hex[:min(13, len(hex))]
}

func writeImageTable(w io.Writer, imgs []image.Image, lo listOptions) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	header := []string{"IMAGE", "TAG", "IMAGE ID", "SIZE"}
	if lo.digests {
		header = []string{"IMAGE", "TAG", "DIGEST", "IMAGE ID", "SIZE"}
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range imageRows(imgs, lo.noTrunc) {
		cols := []string{r.repo, r.tag, r.id, r.size}
		if lo.digests {
			cols = []string{r.repo, r.tag, r.digest, r.id, r.size}
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}
	return tw.Flush()
}

// imageList is the shape of -o json and -o yaml, close to crictl's (the
// CRI ListImagesResponse), with the size as a number of bytes.
type imageList struct {
	Images []imageEntry `json:"images"`
}

type imageEntry struct {
	ID          string   `json:"id"`
	RepoTags    []string `json:"repoTags"`
	RepoDigests []string `json:"repoDigests"`
	Size        int64    `json:"size"`
	Layers      int      `json:"layers"`
}

func imageListOf(imgs []image.Image) imageList {
	out := imageList{Images: make([]imageEntry, 0, len(imgs))}
	for _, img := range imgs {
		out.Images = append(out.Images, imageEntry{
			ID: img.ID, RepoTags: nonNil(img.RepoTags), RepoDigests: nonNil(img.RepoDigests),
			Size: img.Size, Layers: len(img.Layers),
		})
	}
	return out
}

func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

// writeImageYAML writes the list as YAML. Strings are written as JSON
// strings, which YAML reads as double-quoted scalars, so no value needs a
// YAML library to be escaped right.
func writeImageYAML(w io.Writer, list imageList) error {
	var b strings.Builder
	b.WriteString("images:")
	if len(list.Images) == 0 {
		b.WriteString(" []")
	}
	b.WriteString("\n")
	for _, e := range list.Images {
		id, _ := json.Marshal(e.ID)
		fmt.Fprintf(&b, "- id: %s\n", id)
		writeYAMLList(&b, "repoTags", e.RepoTags)
		writeYAMLList(&b, "repoDigests", e.RepoDigests)
		fmt.Fprintf(&b, "  size: %d\n  layers: %d\n", e.Size, e.Layers)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeYAMLList(b *strings.Builder, key string, list []string) {
	if len(list) == 0 {
		fmt.Fprintf(b, "  %s: []\n", key)
		return
	}
	fmt.Fprintf(b, "  %s:\n", key)
	for _, v := range list {
		quoted, _ := json.Marshal(v)
		fmt.Fprintf(b, "  - %s\n", quoted)
	}
}

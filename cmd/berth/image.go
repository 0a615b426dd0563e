package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func newImageCommand(opts *globalOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "image", Short: "Manage berth's image store"}
	cmd.AddCommand(&cobra.Command{
		Use:   "import PATH...",
		Short: "Import images from OCI layout directories, OCI archives or `docker save` archives",
		Long: `Import images into berth's store without a registry. PATH is an OCI image
layout directory, a tar of one (OCI archive), or a 'docker save' archive.
Works while 'berth serve' runs: the store is shared safely.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := opts.load(cmd)
			if err != nil {
				return err
			}
			store, err := openImageStore(cfg)
			if err != nil {
				return err
			}
			for _, path := range args {
				imgs, err := store.Import(cmd.Context(), path)
				if err != nil {
					return fmt.Errorf("import %s: %w", path, err)
				}
				for _, img := range imgs {
					fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", img.ID, strings.Join(img.RepoTags, ","))
				}
			}
			return nil
		},
	})
	ls := newImagesCommand(opts, "ls")
	ls.Aliases = []string{"list"}
	cmd.AddCommand(ls, newPruneCommand(opts))
	return cmd
}

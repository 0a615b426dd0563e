package config

import (
	"slices"
	"testing"
)

func TestChangedKeys(t *testing.T) {
	a := Default()
	if got := ChangedKeys(a, Default()); len(got) != 0 {
		t.Errorf("ChangedKeys(default, default) = %v, want none", got)
	}
	b := Default()
	b.LogLevel = "debug"
	b.RootDir = "/srv/berth"
	b.Registry.MaxConcurrentDownloads = 7
	b.CNI.BinDirs = []string{"/opt/cni/bin"}
	b.Images.MinFreeSpace = "5%"
	want := []string{"root_dir", "log_level", "cni.bin_dirs", "registry.max_concurrent_downloads", "images.min_free_space"}
	if got := ChangedKeys(a, b); !slices.Equal(got, want) {
		t.Errorf("ChangedKeys = %v, want %v", got, want)
	}
}

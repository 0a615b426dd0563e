package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/berth-dev/berth/internal/errdefs"
)

func TestImagesValidation(t *testing.T) {
	cases := map[string]struct{ content, key string }{
		"unparsable size":          {"max_layer_size = \"big\"", "images.max_layer_size"},
		"negative size":            {"max_image_size = \"-1GiB\"", "images.max_image_size"},
		"zero size":                {"max_file_size = \"0\"", "images.max_file_size"},
		"overflowing size":         {"max_image_size = \"1e30\"", "images.max_image_size"},
		"zero entries":             {"max_layer_entries = -3", "images.max_layer_entries"},
		"percent of 100":           {"min_free_space = \"100%\"", "images.min_free_space"},
		"bad reserve":              {"min_free_space = \"lots\"", "images.min_free_space"},
		"layer over image":         {"max_layer_size = \"2GiB\"\nmax_image_size = \"1GiB\"", "images.max_layer_size"},
		"layer over default image": {"max_layer_size = \"200GiB\"", "images.max_layer_size"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Load(writeConfig(t, "[images]\n"+c.content+"\n"), true)
			if !errors.Is(err, errdefs.ErrInvalidArgument) || !strings.Contains(err.Error(), c.key) {
				t.Errorf("err = %v, want InvalidArgument naming %s", err, c.key)
			}
		})
	}
}

func TestImagesLimits(t *testing.T) {
	if got, want := Default().Images.Limits(), (ImageLimits{MaxFileSize: 16 << 30, MaxLayerSize: 64 << 30,
		MaxImageSize: 128 << 30, MaxLayerEntries: 1 << 20, MinFreeBytes: 1 << 30}); got != want {
		t.Errorf("default limits = %+v, want %+v", got, want)
	}
	c, err := Load(writeConfig(t, "[images]\nmax_layer_size = \"512MiB\"\nmax_image_size = \"1G\"\nmin_free_space = \"2.5%\"\n"), true)
	if err != nil {
		t.Fatal(err)
	}
	l := c.Images.Limits()
	if l.MaxLayerSize != 512<<20 || l.MaxImageSize != 1<<30 || l.MinFreePercent != 2.5 || l.MinFreeBytes != 0 || l.MaxFileSize != 16<<30 {
		t.Errorf("limits = %+v", l)
	}
	c, err = Load(writeConfig(t, "[images]\nmin_free_space = \"0\"\nmax_file_size = \"1MiB\"\n"), true)
	if err != nil {
		t.Fatal(err)
	}
	if l := c.Images.Limits(); l.MinFreeBytes != 0 || l.MinFreePercent != 0 {
		t.Errorf("min_free_space \"0\" = %+v, want no reserve", l)
	}
}

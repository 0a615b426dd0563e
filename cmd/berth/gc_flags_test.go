package main

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestGCFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{nil, ""},
		{[]string{"--image-gc-high-threshold=1", "--image-gc-low-threshold=0", "--image-minimum-gc-age=0s"}, ""},
		{[]string{"--image-gc-high-threshold=100"}, ""},
		{[]string{"--image-gc-high-threshold=101"}, "--image-gc-high-threshold 101 must be between 0 and 100"},
		{[]string{"--image-gc-low-threshold=85"}, "--image-gc-low-threshold 85 must be less than --image-gc-high-threshold 85"},
		{[]string{"--image-maximum-gc-age=1m"}, "must be greater than --image-minimum-gc-age 2m0s"},
		{[]string{"--minimum-container-ttl-duration=-1s"}, "must not be negative"},
	} {
		var f gcFlags
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		f.bind(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.config()
		if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.err)
			continue
		}
		if err == nil && len(tc.args) == 0 {
			if cfg.Images.HighThresholdPercent != 85 || cfg.Images.LowThresholdPercent != 80 || cfg.Images.MinAge != 2*time.Minute ||
				cfg.Containers.MaxPerPodContainer != 1 || cfg.Containers.MaxContainers != -1 || cfg.ImagePeriod != 5*time.Minute {
				t.Errorf("defaults: %+v %+v", *cfg.Images, *cfg.Containers)
			}
		}
	}
}

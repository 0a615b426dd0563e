package imagegc

import (
	"errors"
	"fmt"
	"time"
)

// Policy is kubelet's image GC policy (its flags, in brackets).
type Policy struct {
	// HighThresholdPercent of the image filesystem's capacity in use
	// starts a collection (--image-gc-high-threshold, 85); 100 turns image
	// garbage collection off.
	HighThresholdPercent int
	// LowThresholdPercent is where a collection stops
	// (--image-gc-low-threshold, 80).
	LowThresholdPercent int
	// MinAge is how long an image is kept after it was first seen
	// (--image-minimum-gc-age, 2m).
	MinAge time.Duration
	// MaxAge removes images unused for longer, whatever the disk usage
	// (--image-maximum-gc-age); 0 is off.
	MaxAge time.Duration
}

// Kubelet's defaults.
const (
	DefaultHighThresholdPercent = 85
	DefaultLowThresholdPercent  = 80
	DefaultMinAge               = 2 * time.Minute
	DefaultPeriod               = 5 * time.Minute
)

// DefaultPolicy is kubelet's default policy.
func DefaultPolicy() Policy {
	return Policy{
		HighThresholdPercent: DefaultHighThresholdPercent,
		LowThresholdPercent:  DefaultLowThresholdPercent,
		MinAge:               DefaultMinAge,
	}
}

// Validate checks the policy as kubelet's configuration validation does,
// naming each flag.
func (p Policy) Validate() error {
	var errs []error
	if p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100 {
		errs = append(errs, fmt.Errorf("--image-gc-high-threshold %d must be between 0 and 100, inclusive", p.HighThresholdPercent))
	}
	if p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100 {
		errs = append(errs, fmt.Errorf("--image-gc-low-threshold %d must be between 0 and 100, inclusive", p.LowThresholdPercent))
	}
	if p.LowThresholdPercent >= p.HighThresholdPercent {
		errs = append(errs, fmt.Errorf("--image-gc-low-threshold %d must be less than --image-gc-high-threshold %d",
			p.LowThresholdPercent, p.HighThresholdPercent))
	}
	if p.MinAge < 0 {
		errs = append(errs, fmt.Errorf("--image-minimum-gc-age %s must not be negative", p.MinAge))
	}
	if p.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("--image-maximum-gc-age %s must not be negative", p.MaxAge))
	}
	if p.MaxAge > 0 && p.MaxAge <= p.MinAge {
		errs = append(errs, fmt.Errorf("--image-maximum-gc-age %s must be greater than --image-minimum-gc-age %s", p.MaxAge, p.MinAge))
	}
	return errors.Join(errs...)
}

// disabled reports whether image garbage collection is off (kubelet: a
// high threshold of 100).
func (p Policy) disabled() bool { return p.HighThresholdPercent >= 100 }

package logrotate

import (
	"fmt"
	"time"
)

// Policy is when and how container logs are rotated.
type Policy struct {
	// MaxSize is the size in bytes above which a log is rotated.
	MaxSize int64
	// MaxFiles is how many files a container's log keeps, the current one
	// counted.
	MaxFiles int
	// Interval is how often the logs' sizes are checked.
	Interval time.Duration
	// Workers is how many containers' logs are rotated at once.
	Workers int
}

// The kubelet's defaults.
const (
	DefaultMaxSize  = 10 << 20
	DefaultMaxFiles = 5
	DefaultInterval = 10 * time.Second
	DefaultWorkers  = 1
)

// DefaultPolicy is the kubelet's default policy.
func DefaultPolicy() Policy {
	return Policy{MaxSize: DefaultMaxSize, MaxFiles: DefaultMaxFiles, Interval: DefaultInterval, Workers: DefaultWorkers}
}

// WithDefaults fills the zero fields with the defaults.
func (p Policy) WithDefaults() Policy {
	d := DefaultPolicy()
	if p.MaxSize == 0 {
		p.MaxSize = d.MaxSize
	}
	if p.MaxFiles == 0 {
		p.MaxFiles = d.MaxFiles
	}
	if p.Interval == 0 {
		p.Interval = d.Interval
	}
	if p.Workers == 0 {
		p.Workers = d.Workers
	}
	return p
}

// Validate says which setting is out of range, as the kubelet's
// configuration validation does.
func (p Policy) Validate() error {
	switch {
	case p.MaxSize <= 0:
		return fmt.Errorf("container log max size %d: must be greater than 0", p.MaxSize)
	case p.MaxFiles < 2:
		return fmt.Errorf("container log max files %d: must be at least 2 (the current log and one rotated)", p.MaxFiles)
	case p.Interval < time.Second:
		return fmt.Errorf("container log monitor interval %s: must be at least 1s", p.Interval)
	case p.Workers < 1:
		return fmt.Errorf("container log max workers %d: must be at least 1", p.Workers)
	}
	return nil
}

package eviction

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Value is a threshold's or a minimum reclaim's amount: a quantity, or a
// fraction of the signal's capacity.
type Value struct {
	Quantity   *resource.Quantity
	Percentage float64 // 0.1 for "10%"; used when Quantity is nil
}

// bytes resolves v against a capacity.
func (v Value) bytes(capacity int64) int64 {
	if v.Quantity != nil {
		return v.Quantity.Value()
	}
	return int64(math.Ceil(v.Percentage * float64(capacity)))
}

// String is the value as flags write it ("100Mi", "10%").
func (v Value) String() string {
	if v.Quantity != nil {
		return v.Quantity.String()
	}
	return strconv.FormatFloat(v.Percentage*100, 'f', -1, 64) + "%"
}

// Threshold is one eviction threshold: the signal is met when what is
// available falls below Value. A hard threshold (GracePeriod 0) acts at
// once; a soft one once it has been met for GracePeriod.
type Threshold struct {
	Signal      Signal
	Value       Value
	GracePeriod time.Duration
	Soft        bool
	// MinReclaim is how far past the threshold the signal must recover
	// before the threshold counts as resolved (nil: not at all).
	MinReclaim *Value
}

// String is the threshold as the flags write it ("memory.available<100Mi").
func (t Threshold) String() string { return string(t.Signal) + "<" + t.Value.String() }

// Defaults are kubelet's hard thresholds on Linux, used when no
// --eviction-hard is given.
func Defaults() []Threshold {
	ts, err := Parse(Flags{Hard: map[string]string{
		"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%",
		"imagefs.available": "15%", "imagefs.inodesFree": "5%",
	}})
	if err != nil {
		panic(err) // constant input
	}
	return ts
}

// Flags are kubelet's eviction flags, already split into maps (ParseMap):
// signal → value.
type Flags struct {
	Hard, Soft, SoftGracePeriod, MinimumReclaim map[string]string
}

// Parse checks and reads the thresholds as kubelet's ParseThresholdConfig
// does: supported signals only, percentages within 0–100% (0% and 100%
// turn a threshold off), positive quantities, a grace period for every
// soft threshold. Errors name the flag and the signal.
func Parse(f Flags) ([]Threshold, error) {
	hard, err := parseStatements("--eviction-hard", f.Hard)
	if err != nil {
		return nil, err
	}
	soft, err := parseStatements("--eviction-soft", f.Soft)
	if err != nil {
		return nil, err
	}
	grace, err := parseGracePeriods(f.SoftGracePeriod)
	if err != nil {
		return nil, err
	}
	reclaim, err := parseMinimumReclaims(f.MinimumReclaim)
	if err != nil {
		return nil, err
	}
	for i := range soft {
		period, found := grace[soft[i].Signal]
		if !found {
			return nil, fmt.Errorf("--eviction-soft: %s: no grace period given in --eviction-soft-grace-period", soft[i].Signal)
		}
		soft[i].Soft, soft[i].GracePeriod = true, period
	}
	out := append(hard, soft...)
	for i := range out {
		if r, found := reclaim[out[i].Signal]; found {
			out[i].MinReclaim = &r
		}
	}
	return out, nil
}

func parseStatements(flag string, m map[string]string) ([]Threshold, error) {
	var out []Threshold
	for _, name := range sortedNames(m) {
		signal := Signal(name)
		if !known(signal) {
			return nil, fmt.Errorf("%s: unsupported eviction signal %q (want one of %s)", flag, name, signalList())
		}
		v, err := parseValue(m[name])
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", flag, name, err)
		}
		if v == nil { // 0% or 100%: no threshold
			continue
		}
		out = append(out, Threshold{Signal: signal, Value: *v})
	}
	return out, nil
}

// parseValue reads "10%" or a quantity; nil for 0% and 100%, which kubelet
// ignores.
func parseValue(s string) (*Value, error) {
	s = strings.TrimSpace(s)
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(pct, 64)
		switch {
		case err != nil || math.IsNaN(f):
			return nil, fmt.Errorf("invalid percentage %q", s)
		case f < 0 || f > 100:
			return nil, fmt.Errorf("percentage %q: want >= 0%% and <= 100%%", s)
		case f == 0 || f == 100:
			return nil, nil
		}
		return &Value{Percentage: f / 100}, nil
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return nil, fmt.Errorf("invalid quantity %q: %w", s, err)
	}
	if q.Sign() <= 0 {
		return nil, fmt.Errorf("threshold %q: must be positive", s)
	}
	return &Value{Quantity: &q}, nil
}

func parseGracePeriods(m map[string]string) (map[Signal]time.Duration, error) {
	out := map[Signal]time.Duration{}
	for _, name := range sortedNames(m) {
		if !known(Signal(name)) {
			return nil, fmt.Errorf("--eviction-soft-grace-period: unsupported eviction signal %q (want one of %s)", name, signalList())
		}
		d, err := time.ParseDuration(strings.TrimSpace(m[name]))
		if err != nil {
			return nil, fmt.Errorf("--eviction-soft-grace-period: %s: %w", name, err)
		}
		if d < 0 {
			return nil, fmt.Errorf("--eviction-soft-grace-period: %s: %s: must not be negative", name, d)
		}
		out[Signal(name)] = d
	}
	return out, nil
}

func parseMinimumReclaims(m map[string]string) (map[Signal]Value, error) {
	out := map[Signal]Value{}
	for _, name := range sortedNames(m) {
		if !known(Signal(name)) {
			return nil, fmt.Errorf("--eviction-minimum-reclaim: unsupported eviction signal %q (want one of %s)", name, signalList())
		}
		v, err := parseValue(m[name])
		if err != nil {
			return nil, fmt.Errorf("--eviction-minimum-reclaim: %s: %w", name, err)
		}
		if v != nil {
			out[Signal(name)] = *v
		}
	}
	return out, nil
}

// ParseMap splits a kubelet map flag ("memory.available<100Mi,nodefs.available<10%"
// with sep "<"; "memory.available=1m30s" with sep "="). A signal given
// twice is an error.
func ParseMap(flag, s, sep string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, sep)
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("%s: %q: want SIGNAL%sVALUE", flag, item, sep)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s: %s given twice", flag, k)
		}
		out[k] = v
	}
	return out, nil
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func signalList() string {
	names := make([]string, len(signals))
	for i, s := range signals {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

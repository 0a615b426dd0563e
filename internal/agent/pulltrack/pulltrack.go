package pulltrack

import (
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient"
)

// Layer states, as criclient.PullEvent reports them.
const (
	stateDownloading = "downloading"
	stateUnpacking   = "unpacking"
	stateDone        = "done"
	stateExists      = "exists"
	stateFailed      = "failed"
)

func ended(state string) bool {
	return state == stateDone || state == stateExists || state == stateFailed
}

// Pulls are the image pulls of one pod. Safe for concurrent use.
type Pulls struct {
	clock clock.PassiveClock

	mu      sync.Mutex
	byImage map[string]*Pull
	order   []string // images, first pulled first
}

// New returns an empty set of pulls reading time from clk.
func New(clk clock.PassiveClock) *Pulls {
	return &Pulls{clock: clk, byImage: map[string]*Pull{}}
}

// Pull is one pull of an image; its methods are safe for concurrent use.
type Pull struct {
	ps *Pulls // its mu guards every field below

	image    string
	detailed bool
	started  time.Time
	ended    time.Time
	state    string
	err      string
	size     int64
	layers   map[string]*agentapi.LayerPull
	order    []string // layer digests, first reported first
}

// Start records a new pull of image; it replaces the image's last one.
func (ps *Pulls) Start(image string) *Pull {
	p := &Pull{ps: ps, image: image, started: ps.clock.Now(), state: agentapi.PullPulling, layers: map[string]*agentapi.LayerPull{}}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if _, seen := ps.byImage[image]; !seen {
		ps.order = append(ps.order, image)
	}
	ps.byImage[image] = p
	return p
}

// Detailed marks a pull whose runtime reports its progress (its events
// will follow).
func (p *Pull) Detailed() {
	p.ps.mu.Lock()
	defer p.ps.mu.Unlock()
	p.detailed = true
}

// Event records one progress report; events about the whole image (no
// layer) are left to End, which knows the outcome.
func (p *Pull) Event(ev criclient.PullEvent) {
	if ev.Layer == "" {
		return
	}
	p.ps.mu.Lock()
	defer p.ps.mu.Unlock()
	if p.state != agentapi.PullPulling {
		return
	}
	l := p.layers[ev.Layer]
	if l == nil {
		l = &agentapi.LayerPull{Digest: ev.Layer}
		p.layers[ev.Layer] = l
		p.order = append(p.order, ev.Layer)
	}
	if ended(l.State) {
		return
	}
	l.State = ev.State
	l.Done = max(l.Done, ev.Done)
	if ev.Total > 0 {
		l.Total = ev.Total
	}
	now := p.ps.clock.Now()
	if l.Started.IsZero() && (ev.State == stateDownloading || ev.State == stateUnpacking) {
		l.Started = now
	}
	if ended(ev.State) {
		l.Ended = now
	}
}

// End records the pull's outcome and, after a success, the image's size
// (0 when unknown). Later calls change nothing.
func (p *Pull) End(err error, size int64) {
	p.ps.mu.Lock()
	defer p.ps.mu.Unlock()
	if p.state != agentapi.PullPulling {
		return
	}
	p.ended = p.ps.clock.Now()
	p.state = agentapi.PullDone
	p.size = size
	if err != nil {
		p.state, p.err = agentapi.PullFailed, err.Error()
	}
}

// List returns the pulls, the first image pulled first, without the pod's
// identity (the caller fills Namespace, Pod and PodUID in).
func (ps *Pulls) List() []agentapi.ImagePull {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	now := ps.clock.Now()
	out := make([]agentapi.ImagePull, 0, len(ps.order))
	for _, image := range ps.order {
		out = append(out, ps.byImage[image].snapshot(now))
	}
	return out
}

// snapshot is the pull as the API shows it; ps.mu is held.
func (p *Pull) snapshot(now time.Time) agentapi.ImagePull {
	out := agentapi.ImagePull{
		Image: p.image, State: p.state, Detailed: p.detailed, Size: p.size,
		Started: p.started, Ended: p.ended, Error: p.err,
		LayersTotal: len(p.order),
	}
	known := true
	for _, digest := range p.order {
		l := *p.layers[digest]
		out.Layers = append(out.Layers, l)
		if l.State == stateDone || l.State == stateExists {
			out.LayersDone++
		}
		if l.State == stateExists {
			continue // present already: nothing fetched
		}
		out.BytesDone += l.Done
		out.BytesTotal += max(l.Total, l.Done)
		known = known && (l.Total > 0 || ended(l.State))
	}
	if !known {
		out.BytesTotal = 0
	}
	end := now
	if !p.ended.IsZero() {
		end = p.ended
	}
	if d := end.Sub(p.started); d > 0 {
		out.Rate = float64(out.BytesDone) / d.Seconds()
	}
	return out
}

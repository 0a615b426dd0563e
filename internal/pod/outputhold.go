package pod

import (
	"os"
	"sync"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/monitor"
)

// outputHolds keeps a read end of each live container's output FIFOs
// (monitor.StdoutFIFO, StderrFIFO, in its bundle). The daemon never reads
// them: while they are open here, a container whose monitor died can go
// on writing (into the pipe's buffer, then blocking) instead of dying of
// SIGPIPE, until the new monitor (monitorDied) opens them and reads on.
// It owns only its map.
type outputHolds struct {
	mu    sync.Mutex
	files map[string][]*os.File
}

// hold opens the FIFOs of container id in bundle; a container without
// them (a terminal, or made by an older monitor) holds nothing.
func (h *outputHolds) hold(id, bundle string) error {
	var files []*os.File
	for _, name := range []string{monitor.StdoutFIFO, monitor.StderrFIFO} {
		f, err := monitor.OpenFIFO(bundle, name)
		if errdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			closeAll(files)
			return err
		}
		files = append(files, f)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.files == nil {
		h.files = map[string][]*os.File{}
	}
	closeAll(h.files[id])
	h.files[id] = files
	return nil
}

// release closes what hold opened for container id.
func (h *outputHolds) release(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	closeAll(h.files[id])
	delete(h.files, id)
}

func closeAll(files []*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

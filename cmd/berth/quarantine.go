package main

import (
	"path/filepath"
	"strings"

	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/internal/pod"
)

// kindImage is the kind of a quarantined image record.
const kindImage = "image"

// quarantine lists every record berth set aside unread: the pod service's
// sandbox and container records and the image store's records, for CRI
// Status and the berth_quarantined_records metric.
type quarantine struct {
	pods   *pod.Service
	images *image.Store
}

// Quarantined lists the records, sandboxes and containers first.
func (q quarantine) Quarantined() []pod.QuarantinedRecord {
	out := q.pods.Quarantined()
	imgs, err := q.images.Quarantined()
	if err != nil {
		return append(out, pod.QuarantinedRecord{Kind: kindImage, Path: q.images.Root(), Reason: "cannot list: " + err.Error()})
	}
	for _, r := range imgs {
		out = append(out, pod.QuarantinedRecord{
			Kind: kindImage, ID: strings.TrimSuffix(filepath.Base(r.Source), ".json"), Path: r.Path, Reason: r.Reason,
		})
	}
	return out
}

// kinds counts the records by kind, every kind always present so that an
// alert on them has a series to watch.
func (q quarantine) kinds() map[string]int {
	n := map[string]int{pod.KindSandbox: 0, pod.KindContainer: 0, kindImage: 0}
	for _, r := range q.Quarantined() {
		n[r.Kind]++
	}
	return n
}

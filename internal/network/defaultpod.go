package network

import (
	"encoding/json"

	"github.com/containernetworking/cni/libcni"
)

// forPod returns the list a pod is added with. On berth's own default
// network a pod without host ports skips the portmap plugin: with nothing
// to map it only costs a process at ADD and at DEL. libcni caches the list
// it was given, so the pod's DEL skips it too. An admin's config is used as
// it is.
func forPod(list *libcni.NetworkConfigList, mappings []map[string]any) *libcni.NetworkConfigList {
	if len(mappings) > 0 {
		return list
	}
	if _, own, _ := parseDefault(list.Bytes); !own {
		return list
	}
	var doc map[string]any
	if err := json.Unmarshal(list.Bytes, &doc); err != nil {
		return list
	}
	plugins, _ := doc["plugins"].([]any)
	kept := make([]any, 0, len(plugins))
	for _, p := range plugins {
		if m, ok := p.(map[string]any); ok && m["type"] == "portmap" {
			continue
		}
		kept = append(kept, p)
	}
	if len(kept) == len(plugins) || len(kept) == 0 {
		return list
	}
	doc["plugins"] = kept
	data, err := json.Marshal(doc)
	if err != nil {
		return list
	}
	reduced, err := libcni.NetworkConfFromBytes(data)
	if err != nil {
		return list
	}
	return reduced
}

package agent

import (
	"fmt"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/workload"
	"github.com/berth-dev/berth/internal/agent/workloadstore"
	"github.com/berth-dev/berth/internal/errdefs"
)

// listServicesLocked lists the Services (resource services) or their
// EndpointSlices (resource endpointslices) of a namespace, every one when empty.
func (a *Agent) listServicesLocked(resource, namespace string) agentapi.WorkloadList {
	list := agentapi.WorkloadList{}
	for _, o := range a.sortedServicesLocked() {
		if namespace != "" && o.svc.Namespace != namespace {
			continue
		}
		if resource == agentapi.ResourceEndpointSlice {
			list.EndpointSlices = append(list.EndpointSlices, workload.EndpointSlices(o.svc, o.endpoints)...)
		} else {
			list.Services = append(list.Services, *o.svc.DeepCopy())
		}
	}
	return list
}

func (a *Agent) lookupServiceLocked(resource, namespace, name string) (*serviceObj, error) {
	o := a.services[namespace+"/"+name]
	if o == nil {
		return nil, fmt.Errorf("%s %q not found in namespace %q: %w", resource, name, namespace, errdefs.ErrNotFound)
	}
	return o, nil
}

// describeServiceLocked returns a Service with its EndpointSlices and
// events.
func (a *Agent) describeServiceLocked(resource, namespace, name string) (agentapi.WorkloadDetail, error) {
	o, err := a.lookupServiceLocked(resource, namespace, name)
	if err != nil {
		return agentapi.WorkloadDetail{}, err
	}
	return agentapi.WorkloadDetail{
		Service:        o.svc.DeepCopy(),
		EndpointSlices: workload.EndpointSlices(o.svc, o.endpoints),
		Events:         o.events.list(),
	}, nil
}

// deleteServiceLocked deletes a Service: its record, then what it holds
// on the host (its address, listeners, DNS names; all of it with the last
// Service).
func (a *Agent) deleteServiceLocked(namespace, name string) (agentapi.DeleteResponse, error) {
	o, err := a.lookupServiceLocked(agentapi.ResourceService, namespace, name)
	if err != nil {
		return agentapi.DeleteResponse{}, err
	}
	if err := a.workloadStore.Remove(workloadstore.KindService, string(o.svc.UID)); err != nil {
		return agentapi.DeleteResponse{}, err
	}
	delete(a.services, o.key())
	a.syncServicesLocked()
	return agentapi.DeleteResponse{Deleted: []agentapi.ApplyResult{{
		Kind: agentapi.KindService, Namespace: namespace, Name: name, UID: string(o.svc.UID), Outcome: agentapi.OutcomeDeleted,
	}}}, nil
}

// isServiceResource says whether resource is the Services' (or their
// EndpointSlices').
func isServiceResource(resource string) bool {
	return resource == agentapi.ResourceService || resource == agentapi.ResourceEndpointSlice
}

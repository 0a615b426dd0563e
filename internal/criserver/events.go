package criserver

import (
	"fmt"

	"google.golang.org/grpc/metadata"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/errdefs"
	"github.com/berth-dev/berth/internal/pod"
)

// Events hands out subscriptions to container and sandbox lifecycle events.
type Events interface {
	SubscribeEvents(buffer int) *pod.EventSubscription
}

// GetContainerEvents streams lifecycle events as they happen until the
// client goes away. A client that reads too slowly loses its subscription
// and gets Unavailable: it must call again (and relist, as kubelet does).
func (s *Server) GetContainerEvents(_ *runtimeapi.GetEventsRequest, stream runtimeapi.RuntimeService_GetContainerEventsServer) error {
	if s.events == nil {
		return fmt.Errorf("container events: not configured: %w", errdefs.ErrNotImplemented)
	}
	sub := s.events.SubscribeEvents(pod.DefaultEventBuffer)
	defer sub.Close()
	// Headers go out once the subscription exists: a client that waits for
	// them knows it will see every later event.
	if err := stream.SendHeader(metadata.MD{}); err != nil {
		return err
	}
	ctx := stream.Context()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-sub.Events():
			if !ok {
				return sub.Err()
			}
			if err := stream.Send(eventCRI(&ev)); err != nil {
				return err
			}
		}
	}
}

// eventCRI converts an event with the statuses it carries.
func eventCRI(ev *pod.Event) *runtimeapi.ContainerEventResponse {
	out := &runtimeapi.ContainerEventResponse{
		ContainerId:        ev.ID,
		ContainerEventType: ev.Type,
		CreatedAt:          ev.Time.UnixNano(),
	}
	if ev.Sandbox.ID != "" {
		out.PodSandboxStatus = sandboxStatus(&ev.Sandbox)
	}
	for i := range ev.Containers {
		out.ContainersStatuses = append(out.ContainersStatuses, containerStatus(&ev.Containers[i]))
	}
	return out
}

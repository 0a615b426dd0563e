package agentapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-dev/berth/internal/errdefs"
)

// Client talks to the agent API over its unix socket.
type Client struct {
	socket string
	http   *http.Client
}

// NewClient returns a client of the agent listening on socket.
func NewClient(socket string) *Client {
	transport := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}
	return &Client{socket: socket, http: &http.Client{Transport: transport}}
}

// Socket is the socket the client talks to.
func (c *Client) Socket() string { return c.socket }

// Reachable reports whether an agent answers on the socket, ready or
// still recovering its pods (then it refuses requests, saying so).
func (c *Client) Reachable(ctx context.Context) bool {
	if _, err := os.Stat(c.socket); err != nil {
		return false
	}
	_, err := c.ListPods(ctx, "")
	var answer *APIError
	return err == nil || errors.As(err, &answer)
}

// Apply sends pods (or a directory to watch) to the agent.
func (c *Client) Apply(ctx context.Context, req ApplyRequest) (ApplyResponse, error) {
	var resp ApplyResponse
	return resp, c.do(ctx, http.MethodPost, pathApply, req, &resp)
}

// Unwatch stops the watch of dir and deletes its pods.
func (c *Client) Unwatch(ctx context.Context, dir string) (DeleteResponse, error) {
	var resp DeleteResponse
	return resp, c.do(ctx, http.MethodPost, pathUnwatch, UnwatchRequest{Dir: dir}, &resp)
}

// ListPods lists the pods of namespace, or of every namespace when it is
// empty, with their status.
func (c *Client) ListPods(ctx context.Context, namespace string) (v1.PodList, error) {
	var list v1.PodList
	path := pathPods
	if namespace != "" {
		path += "?namespace=" + url.QueryEscape(namespace)
	}
	return list, c.do(ctx, http.MethodGet, path, nil, &list)
}

// ListEvents returns the events of the pods of namespace, or of every
// namespace when it is empty.
func (c *Client) ListEvents(ctx context.Context, namespace string) (EventList, error) {
	var list EventList
	path := pathEvents
	if namespace != "" {
		path += "?namespace=" + url.QueryEscape(namespace)
	}
	return list, c.do(ctx, http.MethodGet, path, nil, &list)
}

// Pulls returns the image pulls of the pods of namespace, or of every
// namespace when it is empty.
func (c *Client) Pulls(ctx context.Context, namespace string) (PullList, error) {
	var list PullList
	path := pathPulls
	if namespace != "" {
		path += "?namespace=" + url.QueryEscape(namespace)
	}
	return list, c.do(ctx, http.MethodGet, path, nil, &list)
}

// DescribePod returns a pod with its status and events.
func (c *Client) DescribePod(ctx context.Context, namespace, name string) (PodDetail, error) {
	var detail PodDetail
	return detail, c.do(ctx, http.MethodGet, podPath(namespace, name), nil, &detail)
}

// Delete starts the termination of a pod; grace overrides its
// terminationGracePeriodSeconds when not nil.
func (c *Client) Delete(ctx context.Context, namespace, name string, grace *int64) (DeleteResponse, error) {
	var resp DeleteResponse
	path := podPath(namespace, name)
	if grace != nil {
		path += "?grace=" + strconv.FormatInt(*grace, 10)
	}
	return resp, c.do(ctx, http.MethodDelete, path, nil, &resp)
}

// Node returns the agent's node and its events.
func (c *Client) Node(ctx context.Context) (NodeDetail, error) {
	var out NodeDetail
	err := c.do(ctx, http.MethodGet, pathNode, nil, &out)
	return out, err
}

// UpdateEphemeralContainers sends a running pod's new list of ephemeral
// containers (its current ones unchanged, new ones appended) and returns
// the pod.
func (c *Client) UpdateEphemeralContainers(ctx context.Context, namespace, name string, list []v1.EphemeralContainer) (v1.Pod, error) {
	var pod v1.Pod
	return pod, c.do(ctx, http.MethodPut, podPath(namespace, name)+"/ephemeralcontainers", EphemeralContainersRequest{EphemeralContainers: list}, &pod)
}

func podPath(namespace, name string) string {
	return pathPods + "/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

// do sends one request; an error answer becomes an error of the class its
// status names (errdefs), with the agent's message.
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("agent API %s %s: encode request: %w", method, path, err)
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://agent"+path, reader)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("agent at %s: %w: %w", c.socket, errdefs.ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e ErrorResponse
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Error == "" {
			e.Error = resp.Status
		}
		return &APIError{Status: resp.StatusCode, Message: e.Error}
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("agent API %s %s: decode answer: %w", method, path, err)
	}
	return nil
}

// APIError is an error answer of the agent.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string { return e.Message }

// Is maps the HTTP status back to its error class.
func (e *APIError) Is(target error) bool {
	switch e.Status {
	case http.StatusBadRequest:
		return target == errdefs.ErrInvalidArgument
	case http.StatusNotFound:
		return target == errdefs.ErrNotFound
	case http.StatusConflict:
		return target == errdefs.ErrFailedPrecondition
	case http.StatusServiceUnavailable:
		return target == errdefs.ErrUnavailable
	}
	return false
}

// IsUnreachable reports whether err says no agent answered.
func IsUnreachable(err error) bool {
	var apiErr *APIError
	return errors.Is(err, errdefs.ErrUnavailable) && !errors.As(err, &apiErr)
}

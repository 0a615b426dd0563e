package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-dev/berth/internal/agent/agentapi"
	"github.com/berth-dev/berth/internal/agent/criclient"
	"github.com/berth-dev/berth/internal/agent/podspec"
)

// portForwardOptions are the flags of `berth port-forward`.
type portForwardOptions struct {
	namespace string
	addresses []string
}

func newPortForwardCommand(opts *globalOptions) *cobra.Command {
	var o portForwardOptions
	cmd := &cobra.Command{
		Use:   "port-forward POD [LOCAL:]REMOTE...",
		Short: "Forward local ports to a pod, like kubectl port-forward",
		Long: `Listen on local ports and forward each connection to a port of the pod, inside its
network namespace: CRI PortForward through the runtime endpoint, then the streaming
protocol (SPDY). Ports are LOCAL:REMOTE, REMOTE (the same port locally) or :REMOTE (a free
local port); REMOTE may name a container port. berth listens on 127.0.0.1 only unless
--address says otherwise; it runs until interrupted or the pod's sandbox goes away.`,
		Args:              cobra.MinimumNArgs(2),
		ValidArgsFunction: completePodNames(opts, "", 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPortForward(cmd, opts, o, args[0], args[1:])
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "default", "namespace")
	f.StringSliceVar(&o.addresses, "address", []string{"127.0.0.1"}, "local addresses to listen on (comma-separated; localhost is 127.0.0.1 and ::1)")
	return cmd
}

func runPortForward(cmd *cobra.Command, opts *globalOptions, o portForwardOptions, podName string, portArgs []string) error {
	client, err := connectAgent(cmd, opts)
	if err != nil {
		return err
	}
	detail, err := client.DescribePod(cmd.Context(), o.namespace, podName)
	if err != nil {
		return err
	}
	ports, remotes, err := forwardedPorts(&detail.Pod, portArgs)
	if err != nil {
		return err
	}
	cfg, err := opts.load(cmd)
	if err != nil {
		return err
	}
	cri, err := criclient.Dial(runtimeEndpoint(cfg))
	if err != nil {
		return err
	}
	defer cri.Close()
	sandbox, err := readySandbox(cmd.Context(), cri.RuntimeService(), detail)
	if err != nil {
		return err
	}
	resp, err := cri.RuntimeService().PortForward(cmd.Context(), &runtimeapi.PortForwardRequest{PodSandboxId: sandbox, Port: remotes})
	if err != nil {
		return fmt.Errorf("port-forward to pod %s: %w", podName, err)
	}
	return forward(cmd, resp.GetUrl(), o.addresses, ports)
}

// forward listens on the local ports and serves the streaming session
// at rawURL until SIGINT or SIGTERM, or until the session ends.
func forward(cmd *cobra.Command, rawURL string, addresses, ports []string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("port-forward: streaming URL %q: %w", rawURL, err)
	}
	noProxy := func(*http.Request) (*url.URL, error) { return nil, nil }
	transport, upgrader, err := spdy.RoundTripperFor(&rest.Config{Proxy: noProxy})
	if err != nil {
		return fmt.Errorf("port-forward: %w", err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	pf, err := portforward.NewOnAddresses(dialer, addresses, ports, ctx.Done(), nil, cmd.OutOrStdout(), cmd.ErrOrStderr())
	if err != nil {
		return fmt.Errorf("port-forward: %w", err)
	}
	return pf.ForwardPorts()
}

// forwardedPorts turns [LOCAL:]REMOTE arguments into client-go's
// LOCAL:REMOTE form with numeric ports, a REMOTE that names a container
// port resolved in the pod's spec; remotes are the remote ports.
func forwardedPorts(pod *v1.Pod, args []string) ([]string, []int32, error) {
	var ports []string
	var remotes []int32
	for _, arg := range args {
		local, remote, found := strings.Cut(arg, ":")
		if !found {
			local, remote = "", arg
		}
		port, err := remotePort(pod, remote)
		if err != nil {
			return nil, nil, fmt.Errorf("port %q: %w", arg, err)
		}
		switch {
		case !found:
			local = strconv.Itoa(int(port))
		case local == "":
			local = "0" // a free port
		}
		if _, err := strconv.ParseUint(local, 10, 16); err != nil {
			return nil, nil, fmt.Errorf("port %q: local port %q: want a number from 0 to 65535", arg, local)
		}
		ports = append(ports, local+":"+strconv.Itoa(int(port)))
		remotes = append(remotes, port)
	}
	return ports, remotes, nil
}

// remotePort is a port number from 1 to 65535, or the number of a named
// container port of the pod.
func remotePort(pod *v1.Pod, s string) (int32, error) {
	if n, err := strconv.ParseUint(s, 10, 16); err == nil {
		if n == 0 {
			return 0, fmt.Errorf("remote port: want a number from 1 to 65535")
		}
		return int32(n), nil
	}
	for _, c := range allContainers(pod) {
		for _, p := range c.Ports {
			if p.Name != "" && p.Name == s {
				return p.ContainerPort, nil
			}
		}
	}
	return 0, fmt.Errorf("remote port %q: neither a number from 1 to 65535 nor a container port of pod %s", s, pod.Name)
}

// readySandbox is the id of the pod's ready sandbox.
func readySandbox(ctx context.Context, rt runtimeapi.RuntimeServiceClient, detail agentapi.PodDetail) (string, error) {
	pod := &detail.Pod
	resp, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{podspec.LabelPodUID: string(pod.UID)},
	}})
	if err != nil {
		return "", fmt.Errorf("pod %s: list its sandboxes: %w", pod.Name, err)
	}
	items := resp.GetItems()
	if len(items) == 0 {
		return "", fmt.Errorf("pod %s has no ready sandbox (phase %s)", pod.Name, pod.Status.Phase)
	}
	newest := items[0]
	for _, s := range items[1:] {
		if s.GetMetadata().GetAttempt() > newest.GetMetadata().GetAttempt() {
			newest = s
		}
	}
	return newest.GetId(), nil
}

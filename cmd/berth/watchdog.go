package main

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// criAnswers returns a watchdog liveness check: the daemon is alive when
// its CRI socket answers Version within timeout, as kubelet would see it,
// not merely when a goroutine can tick. The returned close ends its
// connection.
func criAnswers(socket string, timeout time.Duration) (alive func(context.Context) bool, closeConn func(), err error) {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	alive = func(ctx context.Context) bool {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		_, err := rt.Version(ctx, &runtimeapi.VersionRequest{})
		return err == nil
	}
	return alive, func() { conn.Close() }, nil
}

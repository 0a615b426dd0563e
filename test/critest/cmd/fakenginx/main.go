// Command fakenginx stands in for nginx in berth's critest images. It does
// what the CRI validation specs look at: PID 1's command line reads
// "nginx: master process …", the process is named nginx (pidof), its pid is
// written to /var/run/nginx.pid, and it answers HTTP GET with 200 on the
// ports given as arguments (default 80).
package main

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"syscall"
)

const title = "nginx: master process nginx -g daemon off;"

func main() {
	// Re-exec once with the title as argv[0], as nginx rewrites its own.
	if len(os.Args) == 0 || os.Args[0] != title {
		self, err := os.Executable()
		if err != nil {
			fail(err)
		}
		fail(syscall.Exec(self, append([]string{title}, os.Args[1:]...), os.Environ()))
	}
	if err := os.WriteFile("/var/run/nginx.pid", []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		fail(err)
	}
	ports := os.Args[1:]
	if len(ports) == 0 {
		ports = []string{"80"}
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "<html><body>Welcome to nginx!</body></html>")
	})
	errs := make(chan error, len(ports))
	for _, p := range ports {
		go func(addr string) { errs <- http.ListenAndServe(addr, handler) }(":" + p)
	}
	fmt.Println("nginx: serving on", ports)
	fail(<-errs)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "nginx:", err)
	os.Exit(1)
}

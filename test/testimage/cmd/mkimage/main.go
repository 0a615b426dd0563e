// Command mkimage writes a busybox image made from the host's busybox-static,
// without a registry, for `berth image import`:
//
//	go run ./test/testimage/cmd/mkimage -o busybox.tar
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/berth-dev/berth/test/testimage"
)

func main() {
	out := flag.String("o", "busybox-oci.tar", "output path")
	name := flag.String("name", "docker.io/library/busybox:latest", "image name")
	format := flag.String("format", "oci-archive", "oci-archive, oci-layout or docker-archive")
	flag.Parse()
	opts := testimage.Options{Name: *name, Cmd: []string{"sh"}}
	var err error
	switch *format {
	case "oci-archive":
		err = testimage.WriteOCIArchive(*out, opts)
	case "oci-layout":
		err = testimage.WriteLayout(*out, opts)
	case "docker-archive":
		err = testimage.WriteDockerArchive(*out, opts)
	default:
		err = fmt.Errorf("format %q: want oci-archive, oci-layout or docker-archive", *format)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

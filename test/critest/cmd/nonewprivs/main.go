// Command nonewprivs is installed set-user-ID root in berth's critest image
// for the no_new_privs specs: it prints its effective uid, which is 0 when
// the kernel honoured the set-uid bit and the caller's uid under
// no_new_privs.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Printf("Effective uid: %d\n", os.Geteuid())
}

// Command nnp stands in for the nonewprivs test image's program: installed
// set-user-ID root, it prints the effective uid it runs with, which is 0
// unless no_new_privs kept the set-user-ID bit from taking effect.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Printf("Effective uid: %d\n", os.Geteuid())
}

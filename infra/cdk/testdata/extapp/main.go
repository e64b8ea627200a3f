// Command extapp stands in for a user's Keel app in a module of its own
// (like examples/triage): the CDK tests deploy it with keel:app. It has no
// dependencies, so building it takes a second; it only reports the role
// the stack gave it.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Println("extapp: role", os.Getenv("KEEL_ROLE"))
}

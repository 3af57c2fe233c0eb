// Command multislice is the Multislice CLI and manager.
package main

import (
	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/cli/root"
)

func main() { cli.Main(root.Main) }

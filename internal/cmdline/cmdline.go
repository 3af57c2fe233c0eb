// Package cmdline turns a program's flag values back into the command line
// that sets them, so that a program started by another (the manager, the
// simulated cloud's repairer, the simulated agents by `multislice up`) has
// its flags' names and defaults in one place: its Bind.
package cmdline

import (
	"sort"

	"github.com/spf13/pflag"
)

// Args is the command line that gives a program the values f holds: every
// flag bind defines whose value in f differs from its default, as
// --name=value, in name order.
func Args[T any](f T, bind func(*T, *pflag.FlagSet)) []string {
	var bound T
	fl := pflag.NewFlagSet("args", pflag.ContinueOnError)
	bind(&bound, fl)
	bound = f // the flags point into bound: they now read f's values
	var args []string
	fl.VisitAll(func(v *pflag.Flag) {
		if s := v.Value.String(); s != v.DefValue {
			args = append(args, "--"+v.Name+"="+s)
		}
	})
	sort.Strings(args)
	return args
}

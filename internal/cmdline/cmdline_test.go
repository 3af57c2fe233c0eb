package cmdline

import (
	"reflect"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

type flags struct {
	Delay time.Duration
	Port  int
	Name  string
}

func (f *flags) bind(fl *pflag.FlagSet) {
	fl.DurationVar(&f.Delay, "delay", 10*time.Second, "")
	fl.IntVar(&f.Port, "port", 0, "")
	fl.StringVar(&f.Name, "name", "x", "")
}

func TestArgs(t *testing.T) {
	var f flags
	fl := pflag.NewFlagSet("f", pflag.ContinueOnError)
	f.bind(fl)
	if got := Args(f, (*flags).bind); len(got) != 0 {
		t.Errorf("defaults give %v", got)
	}
	f.Port, f.Delay = 7, 3*time.Second
	want := []string{"--delay=3s", "--port=7"}
	if got := Args(f, (*flags).bind); !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	var g flags
	gl := pflag.NewFlagSet("g", pflag.ContinueOnError)
	g.bind(gl)
	if err := gl.Parse(want); err != nil || !reflect.DeepEqual(f, g) {
		t.Errorf("parsed back %+v (%v), want %+v", g, err, f)
	}
}

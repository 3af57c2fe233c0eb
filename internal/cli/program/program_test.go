package program

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

func TestExit(t *testing.T) {
	for _, tc := range []struct {
		err    error
		code   int
		stderr string
	}{
		{nil, 0, ""},
		{errors.New("no cluster"), 1, "error: no cluster\n"},
		{ExitCode(137), 137, ""},
		{fmt.Errorf("agent: %w", ExitCode(3)), 3, ""},
	} {
		var errOut bytes.Buffer
		if code := Exit(&errOut, tc.err); code != tc.code || errOut.String() != tc.stderr {
			t.Errorf("%v: code %d, stderr %q; want %d, %q", tc.err, code, errOut.String(), tc.code, tc.stderr)
		}
	}
}

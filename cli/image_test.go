package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/locktorture/locktorture"
)

// torture image names its image without building it (--print), and says
// what is wrong with a bad name or argument in one line, exit 2. The build
// itself, and runs in the image, are docker's TestTortureImage.
func TestImageFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		out  string // stdout's prefix, or stderr's substring on exit 2
	}{
		{[]string{"image", "--print"}, 0, "locktorture:"},
		{[]string{"image", "--print", "--tag", "registry.example:5000/team/locktorture:v1"}, 0, "registry.example:5000/team/locktorture:v1\n"},
		{[]string{"image", "--print", "--tag", "Locktorture:v1"}, 2, `image name "Locktorture:v1"`},
		{[]string{"image", "--tag", "locktorture:-x"}, 2, `image name "locktorture:-x"`},
		{[]string{"image", "now"}, 2, `unexpected argument "now"`},
		{[]string{"image", "--push"}, 2, "-push"},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(tc.args, &stdout, &stderr, locktorture.Builtin())
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (stdout %q, stderr %q)", tc.args, code, tc.code, stdout.String(), stderr.String())
			continue
		}
		if code == 0 && !strings.HasPrefix(stdout.String(), tc.out) {
			t.Errorf("%v: stdout %q, want %q first", tc.args, stdout.String(), tc.out)
		}
		if code == 2 && (!strings.Contains(stderr.String(), tc.out) || strings.Count(stderr.String(), "\n") != 1) {
			t.Errorf("%v: stderr %q, want one line with %q", tc.args, stderr.String(), tc.out)
		}
	}
}

package docker

import "testing"

// The names the harness's image is given and the module folders it copies:
// what CheckTag lets through is what docker build accepts, and a module
// version becomes a tag.
func TestNames(t *testing.T) {
	for tag, ok := range map[string]bool{
		"locktorture:abc123-dirty":                  true,
		"locktorture":                               true,
		"registry.example:5000/team/locktorture:v1": true,
		"Locktorture:v1":                            false,
		"locktorture:-v1":                           false,
		"locktorture:":                              false,
		"locktorture:a b":                           false,
	} {
		if err := CheckTag(tag); (err == nil) != ok {
			t.Errorf("CheckTag(%q) = %v, want ok %v", tag, err, ok)
		}
	}
	if got := tagSafe("v0.0.0-20260101000000-abcdef123456+dirty"); CheckTag("locktorture:"+got) != nil {
		t.Errorf("tagSafe gave %q, not a tag", got)
	}
	for p, want := range map[string]bool{
		"/usr/share/nodejs/redis/package.json":      true,
		"/usr/lib/nodejs/x/index.js":                true,
		"/usr/lib/x86_64-linux-gnu/nodejs/x/a.node": true,
		"/usr/lib/x86_64-linux-gnu/libc.so.6":       false,
		"/usr/share/doc/node-redis/copyright":       false,
		"/usr/lib/python3/dist-packages/redis/x.py": false,
	} {
		if isNodeModule(p) != want {
			t.Errorf("isNodeModule(%q) = %v", p, !want)
		}
	}
}

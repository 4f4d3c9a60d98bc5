package program

import (
	"strings"
	"testing"
	"time"
)

// TestGrantTTLRead: a grant's ttl_ms is read like the rest of a grant,
// untrusted: an integer from 1 ms to a day, on a grant only; anything else
// is a protocol error saying what was expected.
func TestGrantTTLRead(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`{"type":"reply","id":1,"outcome":"granted","ttl_ms":450}`, ""},
		{`{"type":"reply","id":1,"outcome":"granted","ttl_ms":"soon"}`, `field "ttl_ms" is a JSON string; expected an integer`},
		{`{"type":"reply","id":1,"outcome":"granted","ttl_ms":1.5}`, `field "ttl_ms" is a JSON number 1.5; expected an integer`},
		{`{"type":"reply","id":1,"outcome":"granted","ttl_ms":-5}`, "ttl_ms -5; expected the TTL the lock wrote"},
		{`{"type":"reply","id":1,"outcome":"granted","ttl_ms":86400001}`, "ttl_ms 86400001; expected"},
		{`{"type":"reply","id":1,"outcome":"granted","ttl_ms":99999999999999999999}`, `field "ttl_ms"`},
		{`{"type":"reply","id":2,"outcome":"deleted","ttl_ms":450}`, "ttl_ms on a reply that is not a grant"},
	} {
		l := lineReader(Promises{})
		granted := l.pending[1] // a reply takes its call off the table
		err := l.handle([]byte(tc.line), time.Now())
		l.cancelBg()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.line, err)
		case tc.want == "":
			if m := <-granted.reply; m.TTLMs != 450 {
				t.Errorf("%s: read ttl_ms %d", tc.line, m.TTLMs)
			}
		case err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n"):
			t.Errorf("%s: error %v, want one line saying %q", tc.line, err, tc.want)
		}
	}
}

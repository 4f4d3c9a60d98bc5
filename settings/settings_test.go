package settings

import (
	"strings"
	"testing"
	"time"
)

// TestParse: each kind reads its text, and a bad text says what was wanted.
func TestParse(t *testing.T) {
	cases := []struct {
		kind    Kind
		choices []string
		text    string
		want    any
		err     string
	}{
		{Duration, nil, "300ms", 300 * time.Millisecond, ""},
		{Duration, nil, "soon", nil, `want a duration like 300ms or 2s, got "soon"`},
		{Duration, nil, "-1s", nil, "negative"},
		{Int, nil, " 7 ", 7, ""},
		{Int, nil, "many", nil, "want an integer"},
		{Float, nil, "0.25", 0.25, ""},
		{Bool, nil, "true", true, ""},
		{Bool, nil, "maybe", nil, "want true or false"},
		{String, []string{"up", "down"}, "down", "down", ""},
		{String, []string{"up", "down"}, "sideways", nil, "want up, down"},
		{Range, nil, "5ms..30ms", Span{5 * time.Millisecond, 30 * time.Millisecond}, ""},
		{Range, nil, "2s", Span{2 * time.Second, 2 * time.Second}, ""},
		{Range, nil, "5ms..", nil, "want MIN..MAX"},
		{List, nil, "a, ,b", []string{"a", "b"}, ""},
	}
	for _, tc := range cases {
		s := Setting{Name: "x", Kind: tc.kind, Choices: tc.choices}
		got, err := s.Parse(tc.text)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s %q: error %v, want %q", tc.kind, tc.text, err, tc.err)
			}
			continue
		}
		if err != nil || s.Format(got) != s.Format(tc.want) || !s.Accepts(got) {
			t.Errorf("%s %q: got %v (%v), want %v", tc.kind, tc.text, got, err, tc.want)
		}
		if back, err := s.Parse(s.Format(got)); err != nil || s.Format(back) != s.Format(got) {
			t.Errorf("%s %q: Format does not read back: %v, %v", tc.kind, tc.text, back, err)
		}
	}
}

// TestSetAdd: a name shared with the same kind joins its owners; with
// another kind it is refused, naming both owners.
func TestSetAdd(t *testing.T) {
	var s Set
	dir := Setting{Name: "direction", Kind: String, Owner: "fault latency"}
	if err := s.Add(dir, Setting{Name: "direction", Kind: String, Owner: "fault partition"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Lookup("direction"); got.Owner != "fault latency, partition" {
		t.Errorf("owner %q", got.Owner)
	}
	err := s.Add(Setting{Name: "direction", Kind: Int, Owner: "lock mine"})
	if err == nil || !strings.Contains(err.Error(), "fault latency, partition declares it a string, lock mine a int") {
		t.Errorf("a kind clash: %v", err)
	}
	if err := s.Add(Setting{Name: "a b", Kind: Int}); err == nil {
		t.Error("a name with a space was accepted")
	}
	if err := s.Unknown("directoin"); !strings.Contains(err.Error(), "did you mean direction") {
		t.Errorf("near miss: %v", err)
	}
}

func TestSetAlias(t *testing.T) {
	var s Set
	if err := s.Add(Setting{Name: "faults", Aliases: []string{"nemesis"}, Kind: List, Owner: "run"}); err != nil {
		t.Fatal(err)
	}
	if got, ok := s.Lookup("nemesis"); !ok || got.Name != "faults" {
		t.Errorf("Lookup(nemesis) = %q, %v; want the faults setting", got.Name, ok)
	}
	if names := strings.Join(s.Names(), " "); names != "faults" {
		t.Errorf("names %q: an alias is no setting of its own", names)
	}
	err := s.Add(Setting{Name: "other", Aliases: []string{"faults"}, Kind: Int, Owner: "lock mine"})
	if err == nil || !strings.Contains(err.Error(), `its alias "faults" names another setting`) {
		t.Errorf("an alias taking a setting's name: %v", err)
	}
	err = s.Add(Setting{Name: "nemesis", Kind: List, Owner: "fault mine"})
	if err == nil || !strings.Contains(err.Error(), `the name is an older spelling of "faults"`) {
		t.Errorf("a setting named as another's alias: %v", err)
	}
}

package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/locktorture/locktorture"
	"github.com/locktorture/locktorture/settings"
)

// The command's own settings, which shape what it prints and how it exits
// rather than the run: declared as the run's are, for the help and the
// README's table.
var (
	expectSetting = settings.Setting{Name: "expect", Kind: settings.String, Choices: []string{"valid", "invalid"}, Owner: "command",
		Help: "gate mode: exit 0 only if the verdict is this"}
	quietSetting = settings.Setting{Name: "quiet", Kind: settings.Bool, Default: "false", Owner: "command",
		Help: "no live status line"}
)

// runSettings are every flag of torture run: the run's own settings, those
// of the registries' entries, then the command's own.
func runSettings(regs locktorture.Registries) (*settings.Set, error) {
	all, err := regs.Settings()
	if err != nil {
		return nil, err
	}
	if err := all.Add(expectSetting, quietSetting); err != nil {
		return nil, err
	}
	return all, nil
}

// settingFlag is one setting as a flag: what it parses goes to the run's
// Options through the same Set a spec key goes through.
type settingFlag struct {
	decl settings.Setting
	set  func(name, text string) error
}

// String is empty so that flag's help adds no default of its own: the
// declaration's Default is in the usage line.
func (f settingFlag) String() string { return "" }

func (f settingFlag) Set(text string) error {
	if _, err := f.decl.Parse(text); err != nil {
		return err
	}
	return f.set(f.decl.Name, text)
}

// IsBoolFlag lets --quiet stand alone.
func (f settingFlag) IsBoolFlag() bool { return f.decl.Kind == settings.Bool }

// usageLine is a setting's help with its default.
func usageLine(s settings.Setting) string {
	text := s.Help
	if len(s.Choices) > 0 && !strings.Contains(s.Help, s.Choices[0]) {
		text += " (" + strings.Join(s.Choices, ", ") + ")"
	}
	if s.Default != "" {
		text += " (default: " + s.Default + ")"
	}
	if s.Owner != "" && s.Owner != "run" && s.Owner != "command" {
		text += " [" + s.Owner + "]"
	}
	return text
}

// addSettings declares every setting of all as a flag of fs; set receives
// each one given.
func addSettings(fs *flag.FlagSet, all *settings.Set, set func(name, text string) error) {
	for _, s := range all.All() {
		fs.Var(settingFlag{decl: s, set: set}, s.Name, usageLine(s))
		for _, a := range s.Aliases {
			fs.Var(settingFlag{decl: s, set: set}, a, fmt.Sprintf("an older spelling of --%s", s.Name))
		}
	}
}

// checkShared are the flags torture check shares with torture run: the
// gate (--expect, --fail-on) and the time limit of the linearizability
// check. They come from the run's declarations, so that both commands
// spell, document and judge them alike.
var checkShared = []string{expectSetting.Name, "fail-on", "check-timeout"}

// addShared declares the named settings of torture run as flags of fs;
// set receives each one given, parsed. The declarations are the built-in
// registries': these are the run's own settings, which no entry changes.
func addShared(fs *flag.FlagSet, names []string, set func(decl settings.Setting, v any)) error {
	all, err := runSettings(locktorture.Registries{})
	if err != nil {
		return err
	}
	for _, name := range names {
		decl, ok := all.Lookup(name)
		if !ok {
			return all.Unknown(name)
		}
		fs.Var(settingFlag{decl: decl, set: func(_, text string) error {
			v, err := decl.Parse(text)
			if err != nil {
				return err
			}
			set(decl, v)
			return nil
		}}, decl.Name, usageLine(decl))
	}
	return nil
}

// FlagTable is the README's table of torture run's flags, made from the
// declarations of regs: one row a setting, with whether a matrix spec may
// set it.
func FlagTable(regs locktorture.Registries) (string, error) {
	all, err := runSettings(regs)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| flag | meaning | default | in a spec |\n|---|---|---|---|\n")
	for _, s := range all.All() {
		arg := " " + strings.ToUpper(string(s.Kind))
		switch {
		case s.Kind == settings.Bool:
			arg = ""
		case len(s.Choices) > 0:
			arg = " " + strings.Join(s.Choices, `\|`)
		case s.Kind == settings.Range:
			arg = " MIN..MAX"
		case s.Kind == settings.List:
			arg = " a,b,..."
		}
		spec := "no"
		if s.Owner != "command" && locktorture.SpecKey(s) {
			spec = "yes"
		}
		help := s.Help
		if s.Owner != "run" && s.Owner != "command" {
			help += " (" + s.Owner + ")"
		}
		fmt.Fprintf(&b, "| `--%s%s` | %s | %s | %s |\n", s.Name, arg, strings.ReplaceAll(help, "|", `\|`), s.Default, spec)
	}
	return b.String(), nil
}

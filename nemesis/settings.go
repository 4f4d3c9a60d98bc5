// Settings read by more than one family of faults, declared once here so
// that each becomes one flag of torture run and one key of a matrix spec,
// whichever faults a run chooses. A setting only one family reads lives in
// that family's file instead.

package nemesis

import "github.com/locktorture/locktorture/settings"

// setDirection is which way a network fault acts: latency, partition,
// lost-reply and the Redlock partitions read it, each with its own default.
func setDirection() settings.Setting {
	return settings.Setting{Name: "direction", Kind: settings.String, Choices: []string{"up", "down", "both"}, Default: "per fault",
		Help: "network faults: up (client to Redis), down (the replies) or both"}
}

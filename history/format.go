package history

import (
	"fmt"
	"math"
)

// FormatTime renders an instant of the history's clock in seconds, the way
// people read timelines ("1.204s"): every checker's anomaly detail, the
// linearizability explanation and the stream's notes read alike.
func FormatTime(ns int64) string {
	switch {
	case ns >= Never:
		return "never"
	case ns == math.MinInt64:
		return "the start"
	}
	return fmt.Sprintf("%.3fs", float64(ns)/1e9)
}

// FormatDuration renders a length of the history's clock in the unit of
// FormatTime.
func FormatDuration(ns int64) string { return fmt.Sprintf("%.3fs", float64(ns)/1e9) }

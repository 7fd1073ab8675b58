package units

import "time"

// DurationFlag is a command-line flag (a pflag.Value) that reads
// ParseDuration's grammar, so `--delay 5` is 5 seconds as `duration = "5"`
// is in a pipeline, and a negative duration is refused as it is there.
type DurationFlag struct{ D *time.Duration }

// NewDurationFlag sets *d to def and returns the flag that writes it.
func NewDurationFlag(d *time.Duration, def time.Duration) DurationFlag {
	*d = def
	return DurationFlag{d}
}

// Set parses s.
func (f DurationFlag) Set(s string) error {
	d, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*f.D = d
	return nil
}

// String is the value as Go prints a duration ("0" for none, so help
// omits a zero default as it does for time.Duration flags).
func (f DurationFlag) String() string {
	if f.D == nil || *f.D == 0 {
		return "0"
	}
	return f.D.String()
}

// Type is the name help shows for the value.
func (f DurationFlag) Type() string { return "duration" }

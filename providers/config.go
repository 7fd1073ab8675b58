package providers

// Validator is implemented by every provider config struct (the values
// Type.NewConfig returns; TypeOf requires it). The engine calls Validate
// after decoding a provider block for a trial, before New, so `benchflow
// validate` reports a bad attribute at its place in the file; New applies
// the same checks and may rely on them.
type Validator interface {
	Validate() error
}

// ConfigError is a problem with one attribute of a provider block. Validate
// returns them, joined with errors.Join when there are several; the engine
// reports each at the attribute's range (any other error at the block).
type ConfigError struct {
	Attr string // the attribute: "network"
	Msg  string // what is wrong and what is allowed, with a suggestion
	// Warning marks a value that is allowed but probably a mistake (a
	// network named one letter away from a mode): reported, not refused.
	Warning bool
}

func (e *ConfigError) Error() string { return e.Attr + ": " + e.Msg }

// ConfigErrors lists the *ConfigError values of err (which may join
// several), and the errors that are none.
func ConfigErrors(err error) (attrs []*ConfigError, other []error) {
	var walk func(error)
	walk = func(err error) {
		switch e := err.(type) {
		case nil:
		case *ConfigError:
			attrs = append(attrs, e)
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				walk(x)
			}
		default:
			other = append(other, err)
		}
	}
	walk(err)
	return attrs, other
}
